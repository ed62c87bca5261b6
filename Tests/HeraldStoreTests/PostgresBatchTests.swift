import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// The set-based group commit of the PostgreSQL store: a fixed number of round trips per batch, and exact quotas
/// across batches committed at the same time on several connections and instances.
@Suite("PostgreSQL store: batches")
struct PostgresBatchTests {
    /// The statements a batch costs (BEGIN and COMMIT included) do not grow with the batch: every accept of the batch
    /// is counted, checked and inserted by the same statements.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aBatchOfAcceptsCostsTheSameRoundTripsWhateverItsSize() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let devices = (0..<8).map { _ in Fixtures.device().device }
        for device in devices { try await store.insertDevice(device) }
        let day = UTCDay(containing: start).description
        func accepts(_ count: Int) -> [AcceptRequest] {
            (0..<count).map { index in
                AcceptRequest(
                    notification: Fixtures.notification(for: devices[index % devices.count]),
                    quota: QuotaRequest(day: day, maximum: 1_000, pendingMaximum: 1_000),
                    lease: Lease(owner: "instance-1", expiresAt: start.addingTimeInterval(60)))
            }
        }
        // The first batch of a day makes the day's partitions (one statement, once per day and instance): not counted.
        _ = try await store.commit(WriteBatch(accepts: accepts(1), owner: "instance-1"))
        var costs: [Int] = []
        for size in [1, 16, 200] {
            let before = store.statements.total
            let decisions = try await store.commit(WriteBatch(accepts: accepts(size), owner: "instance-1"))
            costs.append(store.statements.total - before)
            #expect(decisions.count == size)
        }
        #expect(costs[0] == costs[1] && costs[1] == costs[2], "statements per batch of 1, 16 and 200 accepts: \(costs)")
        #expect(costs[2] == 1, "one statement per batch (herald_commit_batch); BEGIN, four statements and COMMIT before")
        try await store.close()
    }

    /// Outcomes likewise: one statement saves them all, and the quota they release is written with the counters.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aBatchOfOutcomesCostsTheSameRoundTripsWhateverItsSize() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let devices = (0..<4).map { _ in Fixtures.device().device }
        for device in devices { try await store.insertDevice(device) }
        let day = UTCDay(containing: start).description
        let lease = Lease(owner: "instance-1", expiresAt: start.addingTimeInterval(60))
        let notifications = (0..<101).map { Fixtures.notification(for: devices[$0 % devices.count], quotaDay: day) }
        _ = try await store.commit(
            WriteBatch(
                accepts: notifications.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: day, maximum: 1_000), lease: lease) },
                owner: lease.owner))
        func outcome(_ notification: PushNotification) -> DeliveryOutcome {
            var failed = notification
            failed.status = .failed
            failed.attempts = 1
            failed.lastError = "BadDeviceToken"
            return DeliveryOutcome(notification: failed, releasesQuota: true)
        }
        var costs: [Int] = []
        for range in [0..<1, 1..<101] {
            let before = store.statements.total
            _ = try await store.commit(WriteBatch(outcomes: notifications[range].map(outcome), owner: lease.owner))
            costs.append(store.statements.total - before)
        }
        #expect(costs[0] == costs[1], "statements per batch of 1 and 100 outcomes: \(costs)")
        #expect(costs[1] == 1)
        for device in devices {
            #expect(try await store.quotaCounters(deviceID: device.id, day: day).successful == 0)
        }
        let errors = try await devices.asyncMap { try await store.quotaCounters(deviceID: $0.id, day: day).errors }
        #expect(errors.reduce(0, +) == 101)
        #expect(try await store.notification(id: notifications[5].id)?.status == .failed)
        try await store.close()
    }

    /// Batches committed at once on separate connections of one store and of two stores (instances), each of many
    /// accepts for one device: exactly the daily maximum is accepted, and exactly one accept says it used it up.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func concurrentBatchesOnSeveralConnectionsNeverOvershootTheDailyLimit() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let stores = [try await PostgresTestDatabase.openStore(configuration), try await PostgresTestDatabase.openStore(configuration)]
        let device = Fixtures.device().device
        let other = Fixtures.device().device
        try await stores[0].insertDevice(device)
        try await stores[0].insertDevice(other)
        let day = UTCDay(containing: start).description
        let decisions = try await withThrowingTaskGroup(of: [AcceptDecision].self) { group in
            for round in 0..<16 {
                let store = stores[round % 2]
                group.addTask {
                    let accepts = (0..<10).map { index in
                        AcceptRequest(
                            notification: Fixtures.notification(for: index.isMultiple(of: 3) ? other : device),
                            quota: QuotaRequest(day: day, maximum: 37))
                    }
                    return try await store.commit(WriteBatch(accepts: accepts, owner: "instance-\(round % 2)"))
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let accepted = decisions.filter { if case .accepted = $0 { true } else { false } }
        let usedUp = decisions.filter { if case .accepted(_, usedUpQuota: true) = $0 { true } else { false } }
        #expect(accepted.count == 37 + 37)
        #expect(usedUp.count == 2)
        #expect(try await stores[1].quotaCounters(deviceID: device.id, day: day) == QuotaCounters(attempts: 96, successful: 37, total: 37))
        #expect(try await stores[1].quotaCounters(deviceID: other.id, day: day) == QuotaCounters(attempts: 64, successful: 37, total: 37))
        for store in stores { try await store.close() }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
