import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Daily limits")
struct DailyLimitsTests {
    @Test func anOperatorSetsAndClearsAUserIDsOwnLimit() async throws {
        let store = InMemoryStore()
        let fixture = Fixtures.device()
        try await store.insertDevice(fixture.device)
        let userID = try #require(UserID(fixture.userID.uppercased()))
        let date = Date(timeIntervalSince1970: 1_800_000_000)

        try await DailyLimits.set(500, for: userID, in: store, at: date)
        let limited = try #require(try await store.device(id: fixture.device.id))
        #expect(limited.dailyLimit == 500 && limited.updatedAt == date)

        try await DailyLimits.set(nil, for: userID, in: store)
        #expect(try await store.device(id: fixture.device.id)?.dailyLimit == nil)
    }

    @Test func refusesALimitBelowOneAndAnUnknownUserID() async throws {
        let store = InMemoryStore()
        let fixture = Fixtures.device()
        try await store.insertDevice(fixture.device)
        let userID = try #require(UserID(fixture.userID))
        await #expect(throws: DailyLimitError.limitBelowOne) { try await DailyLimits.set(0, for: userID, in: store) }
        await #expect(throws: DailyLimitError.unknownUser) { try await DailyLimits.set(5, for: .random(), in: store) }
        #expect(try await store.device(id: fixture.device.id)?.dailyLimit == nil)
    }
}
