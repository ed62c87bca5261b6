import Foundation
import HeraldCore
import HeraldDelivery
import HeraldTesting
import Synchronization
import Testing

/// Issue 29, item 5, without sockets: what the group commit does with accepts when the store stops answering
/// (deadline 1 s; the store double holds its commit until the test lets it go on).
@Suite("Group commit deadlines")
struct GroupCommitDeadlineTests {
    static let timeout: Duration = .seconds(1)
    /// A deadline the test fires itself (``DeadlineAlarm/fireAll()``): far beyond any run, so that only the test decides
    /// when it falls, whatever the machine's load.
    static let firedByTheTest: Duration = .seconds(3_600)

    @Test func anAcceptWhoseCommitHasNotBeenSentByItsDeadlineIsRefusedAndRolledBack() async throws {
        let store = StallingStore(stall: .beforeGate)
        let alarm = DeadlineAlarm()
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.firedByTheTest, alarm: alarm)
        let accepted = Task { try await commit.accept(Self.accept()) }
        #expect(await eventually { store.commitsStarted == 1 && alarm.armedCount == 1 }, "the batch is with the store")
        alarm.fireAll()
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await accepted.value }
        store.goOn()
        #expect(await eventually { store.refusedAtGate == 1 }, "the store reached its gate and was refused: rolled back")
        #expect(store.committed.isEmpty)
        #expect(commit.givenUpBatches == .init(rolledBack: 1))
    }

    @Test func anAcceptStillQueuedAtItsDeadlineIsWithdrawnAndNeverWritten() async throws {
        let store = StallingStore(stall: .beforeGate)
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.timeout)
        // An outcome (no deadline: nobody waits for it) holds the store; the accept queues behind it.
        let outcome = Task { try await commit.save(DeliveryOutcome(notification: Self.accept().notification)) }
        #expect(await eventually { store.commitsStarted == 1 })
        let accept = Self.accept()
        let started = ContinuousClock.now
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await commit.accept(accept) }
        // Withdrawn by its own deadline, not sooner (a busy machine may answer later: no upper bound).
        #expect(ContinuousClock.now - started >= Self.timeout)
        store.goOn()
        try await outcome.value
        try await Task.sleep(for: .milliseconds(100))
        #expect(store.committed.count == 1, "the outcome's batch only")
        #expect(!store.committed.flatMap(\.accepts).contains { $0.notification.id == accept.notification.id })
        #expect(store.commitsStarted == 1, "no batch took the withdrawn accept")
    }

    /// The documented exception: a batch whose COMMIT was on its way at its deadline is refused and may still land.
    @Test func aBatchWhoseCommitWasOnItsWayIsRefusedAndCountedAsMaybeCommitted() async throws {
        let store = StallingStore(stall: .afterGate)
        let alarm = DeadlineAlarm()
        // The deadline falls when the test says, once the store has passed the gate (before, a crowded run could reach
        // the deadline before the store's task reached the gate, and the batch was rolled back instead).
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.firedByTheTest, alarm: alarm)
        let accepted = Task { try await commit.accept(Self.accept()) }
        #expect(await eventually { store.passedGate == 1 })
        alarm.fireAll()
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await accepted.value }
        #expect(commit.givenUpBatches == .init(committing: 1, acceptsMaybeCommitted: 1))
        store.goOn()
        #expect(await eventually { store.committed.count == 1 })
    }

    /// A delivery outcome riding in a batch given up for an accept's deadline is not lost (the notification would be
    /// delivered again when its lease expires): it is queued again and saved once the store answers.
    @Test func anOutcomeInABatchGivenUpIsSavedOnceTheStoreAnswers() async throws {
        let store = StallingStore(stall: .beforeGate)
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.timeout)
        let first = Task { try await commit.accept(Self.accept()) }
        #expect(await eventually { store.commitsStarted == 1 })
        let outcome = DeliveryOutcome(notification: Self.accept().notification)
        let saved = Task { try await commit.save(outcome) }
        let second = Task { try await commit.accept(Self.accept()) }
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await first.value }
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await second.value }
        store.goOn()
        try await saved.value
        #expect(store.committed.flatMap(\.outcomes).map(\.notification.id) == [outcome.notification.id])
        #expect(store.committed.flatMap(\.accepts).isEmpty, "no refused accept was written")
    }

    /// An outcome whose store call passed its own deadline (a PostgreSQL call's) is tried again, not dropped.
    @Test func anOutcomeWhoseStoreCallMissedItsDeadlineIsTriedAgain() async throws {
        let store = StallingStore(stall: .never, failures: 2)
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.timeout)
        let outcome = DeliveryOutcome(notification: Self.accept().notification)
        try await commit.save(outcome)
        #expect(store.commitsStarted == 3)
        #expect(store.committed.flatMap(\.outcomes).map(\.notification.id) == [outcome.notification.id])
    }

    /// A store call that missed its own deadline (the caller was answered 503) while its statements went on: when they
    /// reach the gate later, the gate refuses them. Before, the batch's answer left its gate open, and an accept
    /// answered 503 could be committed once the database answered again (a CI run saw one delivered).
    @Test func aBatchAnsweredWithAFailureCanNoLongerCommit() async throws {
        let store = StallingStore(stall: .abandonedCall)
        let alarm = DeadlineAlarm()
        let commit = GroupCommit(store: store, owner: "a", patience: nil, timeout: Self.firedByTheTest, alarm: alarm)
        // Answered by the store's own failure: the group commit's deadline is never fired here.
        await #expect(throws: StoreDeadlineExceeded.self) { _ = try await commit.accept(Self.accept()) }
        #expect(commit.givenUpBatches == .init(), "not given up at the group commit's deadline")
        store.goOn()
        #expect(await eventually { store.refusedAtGate == 1 }, "the abandoned statements reached the gate and were refused")
        #expect(store.committed.isEmpty)
    }

    @Test func withoutADeadlineAnAcceptWaitsForTheStore() async throws {
        let store = StallingStore(stall: .beforeGate)
        let commit = GroupCommit(store: store, owner: "a", patience: nil)
        let accepted = Task { try await commit.accept(Self.accept()) }
        try await Task.sleep(for: Self.timeout * 2)
        store.goOn()
        guard case .accepted = try await accepted.value else {
            Issue.record("not accepted")
            return
        }
        #expect(store.committed.count == 1)
    }

    static func accept() -> AcceptRequest {
        AcceptRequest(notification: Fixtures.notification(for: Fixtures.device().device), quota: QuotaRequest(day: "2025-11-22", maximum: nil))
    }
}

/// A store whose first commit stalls, before or after passing its batch's gate, until ``goOn()``.
private final class StallingStore: CommitOnlyNotificationStore {
    /// `abandonedCall`: the commit throws ``StoreDeadlineExceeded`` at once, as a PostgreSQL call past its own deadline
    /// does, while its statements go on in the background and reach the gate after ``goOn()``.
    enum Stall { case beforeGate, afterGate, never, abandonedCall }

    private struct State {
        var committed: [WriteBatch] = []
        var started = 0
        var refusedAtGate = 0
        var passedGate = 0
        var failuresLeft: Int
        var isGoingOn = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let stall: Stall
    private let state: Mutex<State>

    /// `failures`: the first commits that throw ``StoreDeadlineExceeded`` at once, as a PostgreSQL call past its
    /// deadline does.
    init(stall: Stall, failures: Int = 0) {
        self.stall = stall
        state = Mutex(State(failuresLeft: failures))
    }

    var committed: [WriteBatch] { state.withLock { $0.committed } }
    var commitsStarted: Int { state.withLock { $0.started } }
    var refusedAtGate: Int { state.withLock { $0.refusedAtGate } }
    var passedGate: Int { state.withLock { $0.passedGate } }

    func goOn() {
        let waiting = state.withLock { state in
            state.isGoingOn = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    private func wait() async {
        await withCheckedContinuation { continuation in
            let goesOn = state.withLock { state in
                if !state.isGoingOn { state.waiting.append(continuation) }
                return state.isGoingOn
            }
            if goesOn { continuation.resume() }
        }
    }

    func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        let fails = state.withLock { state in
            state.started += 1
            defer { state.failuresLeft -= 1 }
            return state.failuresLeft > 0
        }
        if fails { throw StoreDeadlineExceeded("a connection and its statements", after: .seconds(1)) }
        if stall == .abandonedCall {
            Task {
                await self.wait()
                do {
                    try batch.gate?.pass()
                    self.state.withLock { $0.committed.append(batch) }
                } catch {
                    self.state.withLock { $0.refusedAtGate += 1 }
                }
            }
            throw StoreDeadlineExceeded("a connection and its statements", after: .seconds(1))
        }
        if stall == .beforeGate { await wait() }
        do {
            try batch.gate?.pass()
        } catch {
            state.withLock { $0.refusedAtGate += 1 }
            throw error
        }
        state.withLock { $0.passedGate += 1 }
        if stall == .afterGate { await wait() }
        state.withLock { $0.committed.append(batch) }
        return batch.accepts.map { _ in .accepted(QuotaCounters(), usedUpQuota: false) }
    }
}
