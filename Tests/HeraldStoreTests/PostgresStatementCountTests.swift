import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// Issue 40, section 1: activity changes and device lookups cost a fixed number of statements, whatever their size
/// (the store's own statement counter, `BEGIN` and `COMMIT` included).
@Suite("PostgreSQL store: statements per batch")
struct PostgresStatementCountTests {
    private static func record(_ device: Device, _ slug: String, version: Int) -> ActivityRecord {
        ActivityRecord(
            deviceID: device.id, slug: slug, state: "ongoing", priority: 3, createdAt: start, updatedAt: start,
            document: Data(#"{"slug":"\#(slug)"}"#.utf8), version: version, pushDueAt: start)
    }

    /// A change writing one activity and one writing 30 (20 new, 10 updated, one deleted) cost the same statements;
    /// everything is read back as written.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func anActivityChangeCostsTheSameStatementsWhateverItWrites() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var costs: [Int] = []
        for (size, version) in [(1, 1), (10, 2), (30, 3)] {
            let records = (0..<size).map { Self.record(device, "a\($0)", version: version) }
            let before = store.statements.total
            try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: records, deletions: ["gone"]), ()) }
            costs.append(store.statements.total - before)
        }
        #expect(costs[0] == costs[1] && costs[1] == costs[2], "statements per change of 1, 10 and 30 activities: \(costs)")
        #expect(costs[2] <= 6)
        let stored = try await store.activities(deviceID: device.id)
        #expect(stored.count == 30)
        #expect(stored.allSatisfy { $0.version == 3 })
        // Two upserts of one slug: the last one is written, as if one after the other.
        try await store.changeActivities(deviceID: device.id) { _ in
            (ActivityWrites(upserts: [Self.record(device, "a0", version: 7), Self.record(device, "a0", version: 8)], deletions: ["a1"]), ())
        }
        #expect(try await store.activity(deviceID: device.id, slug: "a0")?.version == 8)
        #expect(try await store.activity(deviceID: device.id, slug: "a1") == nil)
        try await store.close()
    }

    /// Lookups of 40 devices that are not cached, made at once (by id and by USER_ID hash), are answered right by fewer
    /// statements than lookups: concurrent lookups share one (today's code: one each).
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func deviceLookupsThatMissTheCacheAreBatched() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let devices = (0..<40).map { _ in Fixtures.device().device }
        for device in devices { try await store.insertDevice(device) }
        let before = store.statements.total
        let found = try await withThrowingTaskGroup(of: (Int, Device?).self) { group in
            for (index, device) in devices.enumerated() {
                group.addTask {
                    (index, index.isMultiple(of: 2) ? try await store.device(id: device.id) : try await store.device(userIDHash: device.userIDHash))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        let statements = store.statements.total - before
        for (index, device) in devices.enumerated() { #expect(found[index] == device) }
        #expect(statements < devices.count / 2, "statements for \(devices.count) lookups: \(statements)")
        #expect(try await store.device(id: UUID()) == nil)
        #expect(try await store.device(userIDHash: "nobody") == nil)
        try await store.close()
    }
}
