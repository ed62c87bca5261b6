import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The one `aps.timestamp` rule kept in the store for Home Assistant's Live Activity tokens
/// (``ActivityStore/nextLiveActivityTimestamp(token:now:)``), on every store.
@Suite("Live Activity timestamp store contract")
struct LiveActivityTimestampContractTests {
    let now = Date(timeIntervalSince1970: 1_763_769_600.4)

    @Test(arguments: Backend.available)
    func timestampsStrictlyIncreasePerTokenAndFollowTheClock(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        #expect(try await store.nextLiveActivityTimestamp(token: "aa01", now: now) == 1_763_769_600)
        #expect(try await store.nextLiveActivityTimestamp(token: "aa01", now: now) == 1_763_769_601, "never one second twice")
        #expect(try await store.nextLiveActivityTimestamp(token: "bb02", now: now) == 1_763_769_600, "each token its own")
        #expect(try await store.nextLiveActivityTimestamp(token: "aa01", now: now.addingTimeInterval(-30)) == 1_763_769_602, "a clock behind")
        #expect(try await store.nextLiveActivityTimestamp(token: "aa01", now: now.addingTimeInterval(10)) == 1_763_769_610)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func concurrentCallsForOneTokenGetDistinctTimestamps(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let now = now
        let timestamps = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<12 { group.addTask { try await store.nextLiveActivityTimestamp(token: "cc03", now: now) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(timestamps.sorted() == Array(1_763_769_600..<1_763_769_612))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aTokenWhoseLastTimestampIsLongPastStartsAgainAtTheClock(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        for _ in 0..<3 { _ = try await store.nextLiveActivityTimestamp(token: "dd04", now: now) }
        let later = now.addingTimeInterval(TimeInterval(liveActivityTimestampMemory) * 2)
        #expect(try await store.nextLiveActivityTimestamp(token: "ee05", now: later) == 1_763_769_600 + 2 * liveActivityTimestampMemory)
        #expect(try await store.nextLiveActivityTimestamp(token: "dd04", now: later) == 1_763_769_600 + 2 * liveActivityTimestampMemory)
        try await store.close()
    }

    /// Kept in the database: a restarted SQLite store (another instance on PostgreSQL) goes on from the last one.
    @Test func theLastTimestampSurvivesAReopenOfTheStore() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let first = try SQLiteStore(path: path)
        #expect(try await first.nextLiveActivityTimestamp(token: "ff06", now: now) == 1_763_769_600)
        try await first.close()
        let second = try SQLiteStore(path: path)
        #expect(try await second.nextLiveActivityTimestamp(token: "ff06", now: now) == 1_763_769_601)
        try await second.close()
    }

    @Test func twoPostgresInstancesShareTheRule() async throws {
        guard PostgresTestDatabase.url != nil else { return }
        let schema = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresTestDatabase.openStore(schema)
        let second = try await PostgresTestDatabase.openStore(schema)
        #expect(try await first.nextLiveActivityTimestamp(token: "ab07", now: now) == 1_763_769_600)
        #expect(try await second.nextLiveActivityTimestamp(token: "ab07", now: now) == 1_763_769_601)
        try await first.close()
        try await second.close()
    }
}
