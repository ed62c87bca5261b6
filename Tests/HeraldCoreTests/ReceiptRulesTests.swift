import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Issue 39, section 3: the rules of repeats until acknowledged, pure, on a test clock.
@Suite("Receipt rules")
struct ReceiptRulesTests {
    static func receipt(at clock: TestClock, repeatSeconds: Int = 60, expireSeconds: Int = 3_600, collapse: String = "leak", given: Bool = true)
        -> Receipt
    {
        let first = ReceiptRules.firstRepeat(createdAt: clock.now(), repeatSeconds: repeatSeconds, expireSeconds: expireSeconds)
        return Receipt(
            deviceID: UUID(), tokenID: UUID(), collapseID: collapse, collapseIDGiven: given, content: Data("{}".utf8), repeatSeconds: repeatSeconds,
            expiresAt: first.expiresAt, nextRepeatAt: first.next, createdAt: clock.now())
    }

    @Test func aRepeatIsDueEveryRepeatSecondsUntilTheExpiry() {
        let clock = TestClock()
        var receipt = Self.receipt(at: clock, repeatSeconds: 30, expireSeconds: 100)
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .wait(until: clock.now().addingTimeInterval(30)))
        clock.advance(by: 30)
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .repeatNow)
        receipt = ReceiptRules.afterRepeat(receipt, sentAt: clock.now())
        #expect(receipt.repeatsSent == 1 && receipt.nextRepeatAt == clock.now().addingTimeInterval(30))
        clock.advance(by: 30)
        receipt = ReceiptRules.afterRepeat(receipt, sentAt: clock.now())
        clock.advance(by: 30)
        receipt = ReceiptRules.afterRepeat(receipt, sentAt: clock.now())
        // At 90 s the next (120 s) would fall after the expiry (100 s): the next step is the expiry.
        #expect(receipt.nextRepeatAt == receipt.expiresAt)
        clock.advance(by: 9)
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .wait(until: receipt.expiresAt))
        clock.advance(by: 1)
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .expire)
    }

    @Test func afterAPauseTheNextRepeatFollowsTheLastOneInsteadOfCatchingUp() {
        let clock = TestClock()
        let receipt = Self.receipt(at: clock)
        clock.advance(by: 600)  // the instance was down for ten minutes
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .repeatNow)
        let after = ReceiptRules.afterRepeat(receipt, sentAt: clock.now())
        #expect(after.repeatsSent == 1)
        #expect(ReceiptRules.step(for: after, at: clock.now()) == .wait(until: clock.now().addingTimeInterval(60)))
    }

    @Test func atMostFiftyRepeatsThenItWaitsForTheExpiry() {
        let clock = TestClock()
        var receipt = Self.receipt(at: clock, repeatSeconds: 30, expireSeconds: 10_800)
        var sent = 0
        // Walk the clock: every due step is a repeat until the cap.
        while true {
            clock.advance(by: 30)
            guard ReceiptRules.step(for: receipt, at: clock.now()) == .repeatNow else { break }
            receipt = ReceiptRules.afterRepeat(receipt, sentAt: clock.now())
            sent += 1
        }
        #expect(sent == ReceiptRules.maximumRepeats)
        #expect(receipt.repeatsSent == 50 && receipt.nextRepeatAt == receipt.expiresAt)
        #expect(ReceiptRules.step(for: receipt, at: clock.now()) == .wait(until: receipt.expiresAt))
        #expect(ReceiptRules.step(for: receipt, at: receipt.expiresAt) == .expire)
    }

    @Test func aSkippedRepeatMovesTheNextOneWithoutCountingIt() {
        let clock = TestClock()
        let receipt = Self.receipt(at: clock)
        clock.advance(by: 60)
        let skipped = ReceiptRules.afterSkippedRepeat(receipt, at: clock.now())
        #expect(skipped.repeatsSent == 0 && skipped.nextRepeatAt == clock.now().addingTimeInterval(60))
    }

    @Test func theExpiryComesFirstWhenItIsSoonerThanTheFirstRepeat() {
        let clock = TestClock()
        let first = ReceiptRules.firstRepeat(createdAt: clock.now(), repeatSeconds: 3_600, expireSeconds: 60)
        #expect(first.next == first.expiresAt && first.expiresAt == clock.now().addingTimeInterval(60))
    }

    @Test func aNewerSendReplacesOnlyTheSameTokensActiveReceiptWithTheSameGivenCollapseID() {
        let clock = TestClock()
        let older = Self.receipt(at: clock)
        var newer = Self.receipt(at: clock)
        newer.tokenID = older.tokenID
        #expect(ReceiptRules.replaces(newer, older))
        #expect(!ReceiptRules.replaces(older, older))  // not itself
        var otherToken = newer
        otherToken.tokenID = UUID()
        #expect(!ReceiptRules.replaces(otherToken, older))
        var otherCollapse = newer
        otherCollapse.collapseID = "fire"
        #expect(!ReceiptRules.replaces(otherCollapse, older))
        var derived = newer
        derived.collapseIDGiven = false
        #expect(!ReceiptRules.replaces(derived, older))
        var ended = older
        ended.status = .acknowledged
        #expect(!ReceiptRules.replaces(newer, ended))
    }

    @Test func theDerivedCollapseIDFitsAPNsAndEndedReceiptsGoAfterSevenDaysOrTheShorterRetention() {
        let id = UUID()
        let collapse = ReceiptRules.derivedCollapseID(receiptID: id)
        #expect(collapse.utf8.count <= 64 && collapse.hasSuffix(id.uuidString.lowercased()))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(ReceiptRules.deletionCutoff(at: now, retention: 30 * 86_400) == now.addingTimeInterval(-7 * 86_400))
        #expect(ReceiptRules.deletionCutoff(at: now, retention: 60) == now.addingTimeInterval(-60))
    }
}
