import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Synchronization
import Testing

private let today = UTCDay(containing: Date(timeIntervalSince1970: 1_763_769_600)).description

/// The contract of ``WriteBatch/gate``, on every backend: the store passes the gate after every statement of the
/// batch and before its commit; when passing throws, nothing of the batch is written (the group commit gives a batch
/// up at its deadline this way: issue 29, item 5).
@Suite("Store contract: commit gate")
struct CommitGateContractTests {
    @Test(arguments: Backend.available)
    func aBatchWhoseGateRefusesWritesNothing(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let accept = AcceptRequest(notification: Fixtures.notification(for: device), quota: QuotaRequest(day: today, maximum: 5))
        let passes = Atomic(0)
        let gate = CommitGate {
            passes.add(1, ordering: .relaxed)
            throw CommitAbandoned()
        }
        await #expect(throws: CommitAbandoned.self) {
            _ = try await store.commit(WriteBatch(accepts: [accept], owner: "a", gate: gate))
        }
        #expect(passes.load(ordering: .relaxed) >= 1, "the store passed the gate")
        #expect(try await store.notification(id: accept.notification.id) == nil)
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters())
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aBatchWhoseGatePassesIsWrittenAfterItsStatements(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let accept = AcceptRequest(notification: Fixtures.notification(for: device), quota: QuotaRequest(day: today, maximum: 5))
        let passes = Atomic(0)
        let gate = CommitGate { passes.add(1, ordering: .relaxed) }
        let decisions = try await store.commit(WriteBatch(accepts: [accept], owner: "a", gate: gate))
        guard case .accepted = decisions.first else {
            Issue.record("not accepted: \(decisions)")
            return
        }
        #expect(passes.load(ordering: .relaxed) >= 1)
        #expect(try await store.notification(id: accept.notification.id) != nil)
        try await store.close()
    }
}
