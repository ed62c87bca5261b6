import Foundation
import HeraldCore
import HeraldDelivery
import HeraldTesting
import Synchronization
import Testing

/// The group commit's lanes: as many batches in flight as the store takes (PostgreSQL), a device's entries in one.
@Suite("Group commit: lanes")
struct GroupCommitLaneTests {
    /// Two accepts of devices in different lanes are committed at the same time: the store holds each commit until
    /// two are in flight (with one lane at a time the first would wait for ever, and the time limit fails the test).
    @Test(.timeLimit(.minutes(1)))
    func batchesOfDifferentLanesAreInFlightTogether() async throws {
        let store = RendezvousStore(lanes: 2, meeting: 2)
        let commit = GroupCommit(store: store, owner: "instance-1", patience: nil)
        let devices = Self.devices(inLanes: [0, 1], of: 2)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices { group.addTask { _ = try await commit.accept(Self.accept(for: device)) } }
            try await group.waitForAll()
        }
        #expect(store.mostInFlight == 2)
    }

    /// One device's accepts and outcomes go through one lane: never two of its batches at once, and in queue order.
    @Test func oneDevicesEntriesAreNeverInTwoBatchesAtOnce() async throws {
        let store = RendezvousStore(lanes: 4, meeting: 1)
        let commit = GroupCommit(store: store, owner: "instance-1", patience: nil)
        let device = Fixtures.device().device
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 { group.addTask { _ = try await commit.accept(Self.accept(for: device)) } }
            for _ in 0..<10 {
                group.addTask { try await commit.save(DeliveryOutcome(notification: Fixtures.notification(for: device))) }
            }
            try await group.waitForAll()
        }
        #expect(store.mostInFlight == 1)
        #expect(store.entries == 50)
    }

    static func accept(for device: Device) -> AcceptRequest {
        AcceptRequest(notification: Fixtures.notification(for: device), quota: QuotaRequest(day: "2025-11-22", maximum: nil))
    }

    /// One device for each lane asked (as ``GroupCommit`` assigns them: by the hash of the id).
    static func devices(inLanes lanes: [Int], of count: Int) -> [Device] {
        lanes.map { lane in
            while true {
                let device = Fixtures.device().device
                if (device.id.hashValue & Int.max) % count == lane { return device }
            }
        }
    }
}

/// A store that takes `lanes` batches at once and holds each commit until `meeting` commits are in flight (or, with
/// 1, yields a few times while in flight); it counts the most in flight at once.
private final class RendezvousStore: CommitOnlyNotificationStore {
    private struct State {
        var inFlight = 0
        var mostInFlight = 0
        var entries = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let concurrentBatches: Int
    private let meeting: Int
    private let state = Mutex(State())

    init(lanes: Int, meeting: Int) {
        concurrentBatches = lanes
        self.meeting = meeting
    }

    var mostInFlight: Int { state.withLock { $0.mostInFlight } }
    var entries: Int { state.withLock { $0.entries } }

    func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        await withCheckedContinuation { continuation in
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.inFlight += 1
                state.mostInFlight = max(state.mostInFlight, state.inFlight)
                state.entries += batch.accepts.count + batch.outcomes.count
                state.waiting.append(continuation)
                guard state.waiting.count >= meeting else { return [] }
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiting in released { waiting.resume() }
        }
        for _ in 0..<5 { await Task.yield() }
        state.withLock { $0.inFlight -= 1 }
        return batch.accepts.map { _ in .accepted(QuotaCounters(), usedUpQuota: false) }
    }
}
