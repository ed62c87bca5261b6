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

    /// Issue 40's targets: a group-commit batch of N accepts (counted against a daily limit and a backlog bound, leased)
    /// and N outcomes of earlier ones (half of them failed: their quota is given back) is one round trip, whatever N:
    /// one call of `herald_commit_batch`, no `BEGIN` or `COMMIT` (before migration 21: `BEGIN`, four statements,
    /// `COMMIT`, six). A batch with a dead token keeps its transaction (its devices are deactivated in it).
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aBatchOfAcceptsAndOutcomesIsOneRoundTrip() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let devices = (0..<8).map { _ in Fixtures.device().device }
        for device in devices { try await store.insertDevice(device) }
        let day = UTCDay(containing: start).description
        let lease = Lease(owner: "instance-1", expiresAt: start.addingTimeInterval(60))
        func accepts(_ count: Int) -> [AcceptRequest] {
            (0..<count).map { index in
                AcceptRequest(
                    notification: Fixtures.notification(for: devices[index % devices.count], at: start),
                    quota: QuotaRequest(day: day, maximum: 10_000, pendingMaximum: 10_000), lease: lease)
            }
        }
        func outcomes(_ accepted: [AcceptRequest]) -> [DeliveryOutcome] {
            accepted.enumerated().map { index, request in
                var done = request.notification
                done.status = index.isMultiple(of: 2) ? .delivered : .failed
                done.attempts = 1
                return DeliveryOutcome(notification: done, releasesQuota: done.status == .failed)
            }
        }
        var previous = accepts(1)
        _ = try await store.commit(WriteBatch(accepts: previous, owner: lease.owner))  // the day's partitions: not counted
        var costs: [Int] = []
        for size in [1, 16, 200] {
            let batch = accepts(size)
            let before = store.statements.total
            let decisions = try await store.commit(WriteBatch(accepts: batch, outcomes: outcomes(previous), owner: lease.owner))
            costs.append(store.statements.total - before)
            #expect(decisions.count == size)
            #expect(decisions.allSatisfy { if case .accepted = $0 { true } else { false } })
            previous = batch
        }
        #expect(costs == [1, 1, 1], "round trips per batch of 1, 16 and 200 accepts with as many outcomes: \(costs)")
        var dead = previous[0].notification
        dead.status = .failed
        let before = store.statements.total
        _ = try await store.commit(
            WriteBatch(outcomes: [DeliveryOutcome(notification: dead, releasesQuota: true, deadToken: devices[0].token)], owner: lease.owner))
        #expect(store.statements.total - before == 6, "a dead token: BEGIN, the outcome, the counters locked and written, the deactivation, COMMIT")
        #expect(try await store.device(id: devices[0].id)?.isActive == false)
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
