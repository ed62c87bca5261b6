import Foundation
import HeraldTransport
import Testing

@Suite("Subscribe budget")
struct SubscribeBudgetTests {
    @Test func aSocketSubscribesFiveTimesAtOnceThenSixAMinute() {
        var now = Date(timeIntervalSince1970: 1_763_769_600)
        var budget = SubscribeBudget(perMinute: 6)
        func take() -> Bool { budget.take(at: now) }
        for attempt in 1...SubscribeBudget.burst { #expect(take(), "attempt \(attempt)") }
        #expect(!take())
        now.addTimeInterval(9)
        #expect(!take())
        now.addTimeInterval(1)
        #expect(take())
        #expect(!take())
        now.addTimeInterval(3_600)  // refills to the burst, no further
        for _ in 1...SubscribeBudget.burst { #expect(take()) }
        #expect(!take())

        var unlimited = SubscribeBudget(perMinute: 0)
        var allowed = 0
        for _ in 0..<100 where unlimited.take(at: now) { allowed += 1 }
        #expect(allowed == 100)
    }
}
