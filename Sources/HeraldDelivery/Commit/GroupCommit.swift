import Foundation
import HeraldCore
import Synchronization

/// Group commit for the outbox: accepts and delivery outcomes from concurrent tasks are written in batches, one
/// transaction (and one fsync) for everything that arrived while the previous batch was being written (a
/// ``Batcher``). A caller is answered only once its own entry is durable. Entries are written in the order they were
/// queued, so ``notification(id:)`` reads a notification as it stands after every write queued before the read.
///
/// An outcome that nobody waits for (its sender was answered already, or it has none) may wait for company: a batch
/// of such outcomes alone holds back until an accept or a read arrives, the patience's count is queued, or its delay
/// has passed, so that outcomes ride along with the accepts' commits instead of costing commits (and fsyncs) of their
/// own. Every commit is still synced; an outcome is durable at most that delay later.
///
/// With a deadline (`timeout`, `HERALD_STORE_TIMEOUT_MS`), an accept or a read is answered within it: one still
/// queued when it passes is withdrawn (never written); a batch whose commit has not answered by its earliest
/// deadline is given up, and its callers are told ``StoreDeadlineExceeded``. A batch given up before its store passed
/// the batch's ``CommitGate`` is rolled back, never committed; one given up after (its COMMIT on its way, at most one
/// batch per lane at a time) may still be committed: the only accepts refused that can still be delivered.
///
/// A store that takes several batches at once (``NotificationStore/concurrentBatches``: PostgreSQL, each on a
/// connection of its own) gets that many lanes, each a ``Batcher`` of its own. Every entry of one device goes through
/// the same lane (by the device's id), so a device's accepts and outcomes are still written in the order they were
/// queued; a read waits for every lane.
///
/// ```swift
/// let commit = GroupCommit(store: store, owner: "instance-1")
/// let decision = try await commit.accept(AcceptRequest(notification: n, quota: quota))
/// try await commit.save(DeliveryOutcome(notification: delivered))
/// ```
public final class GroupCommit: Sendable {
    fileprivate enum Entry: Sendable {
        case accept(AcceptRequest)
        case outcome(DeliveryOutcome)
        /// Writes nothing: answered once every entry queued before it is written.
        case barrier
    }

    /// The most entries one transaction takes; the rest wait for the next.
    public static let maximumBatch = 1_024

    /// How long outcomes that nobody waits for hold back for an accept to ride along with: 5 ms, or until 32 are
    /// queued.
    public static let defaultPatience = BatchPatience(maximumDelay: .milliseconds(5), enoughEntries: 32)

    private struct Queued: Sendable {
        var entry: Entry
        var deadline: ContinuousClock.Instant?
    }

    /// One per batch the store takes at once; a device's entries all go through one of them.
    private let lanes: [Batcher<Queued, AcceptDecision?>]
    private let store: any NotificationStore
    /// How long an accept or a read waits for the store, at most; `nil`: as long as it takes.
    public let timeout: Duration?
    private let deadlines: DeadlineAlarm
    private let givenUp = GivenUpCount()

    /// - Parameters:
    ///   - patience: how outcomes that nobody waits for hold back for company; `nil`: never.
    ///   - timeout: how long an accept or a read waits for the store, at most; `nil`: as long as it takes.
    ///   - alarm: what keeps the commits' deadlines (tests pass one they fire themselves, ``DeadlineAlarm/fireAll()``).
    public init(
        store: any NotificationStore, owner: String, metrics: DeliveryMetrics = .init(),
        patience: BatchPatience? = GroupCommit.defaultPatience, timeout: Duration? = nil, alarm: DeadlineAlarm = DeadlineAlarm()
    ) {
        self.store = store
        self.timeout = timeout
        deadlines = alarm
        let deadlines = deadlines
        let givenUp = givenUp
        let process: Batcher<Queued, AcceptDecision?>.Process = { queued in
            let started = ContinuousClock.now
            let entries = queued.map(\.entry)
            let results: [Result<AcceptDecision?, any Error>]
            if let deadline = queued.compactMap(\.deadline).min(), let timeout {
                results = await Self.write(entries, to: store, owner: owner, by: deadline, timeout: timeout, alarm: deadlines, givenUp: givenUp)
            } else {
                results = await Self.write(entries, to: store, owner: owner, attempt: nil)
            }
            let writes = entries.count { if case .barrier = $0 { false } else { true } }
            if writes > 0 { metrics.recordCommit(entries: writes, duration: ContinuousClock.now - started) }
            return results
        }
        lanes = (0..<max(1, store.concurrentBatches)).map { _ in
            Batcher(maximumBatch: Self.maximumBatch, patience: patience, process: process)
        }
    }

    /// The lane of a device's entries.
    private func lane(of deviceID: Device.ID) -> Batcher<Queued, AcceptDecision?> {
        lanes.count == 1 ? lanes[0] : lanes[(deviceID.hashValue & Int.max) % lanes.count]
    }

    /// Accepts one notification; returns once it is durable (or refused for the quota).
    public func accept(_ request: AcceptRequest) async throws -> AcceptDecision {
        let target = lane(of: request.notification.deviceID)
        guard let decision = try await target.submit(queued(.accept(request)), deadline: batchDeadline()) else { preconditionFailure("an accept has a decision") }
        return decision
    }

    /// Saves one delivery outcome; returns once it is durable. `whenQueued` runs as soon as the outcome is queued:
    /// from then on, ``notification(id:)`` sees it. `mayWait`: nobody waits for this outcome to be durable, so its
    /// commit may wait for company (up to the patience's delay).
    public func save(
        _ outcome: DeliveryOutcome, mayWait: Bool = false, whenQueued: (@Sendable () -> Void)? = nil
    ) async throws {
        var whenQueued = whenQueued
        while true {
            do {
                _ = try await lane(of: outcome.notification.deviceID).submit(Queued(entry: .outcome(outcome)), mayWait: mayWait, whenQueued: whenQueued)
                return
            } catch is OutcomeGivenUpWithItsBatch {
                // Its batch was given up for an accept's deadline: nobody refused anything for the outcome, and a
                // delivery whose outcome were lost would be delivered again. Queued again (saving it twice is
                // harmless: the second finds the lease released and writes nothing).
                whenQueued = nil
            } catch let error as StoreDeadlineExceeded {
                // The store did not answer in time (a PostgreSQL call's deadline): tried again, as the outcome
                // waited for the store before there were deadlines, unless the engine is stopping.
                guard !Task.isCancelled else { throw error }
                whenQueued = nil
            }
        }
    }

    /// Commits held-back outcomes now, and holds none back from now on (at shutdown).
    public func stopHoldingBackOutcomes() {
        for lane in lanes { lane.stopHoldingBack() }
    }

    /// One notification as it stands once every write queued before this call is durable: a sender who was answered
    /// before its notification's outcome was written reads that outcome.
    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        if lanes.count == 1 {
            _ = try await lanes[0].submit(queued(.barrier), deadline: batchDeadline())
        } else {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in lanes {
                    let barrier = queued(.barrier)
                    let deadline = batchDeadline()
                    group.addTask { _ = try await lane.submit(barrier, deadline: deadline) }
                }
                try await group.waitForAll()
            }
        }
        return try await store.notification(id: id)
    }

    /// The batches given up at their deadline so far: rolled back, or refused while their commit was on its way.
    public var givenUpBatches: GivenUp { givenUp.state.withLock { $0 } }

    /// An accept or a read, with its deadline when there is one (outcomes have none: nobody waits for them).
    private func queued(_ entry: Entry) -> Queued {
        Queued(entry: entry, deadline: timeout.map { .now + $0 })
    }

    private func batchDeadline() -> BatchDeadline? {
        timeout.map { BatchDeadline(at: .now + $0, error: StoreDeadlineExceeded("the group commit (queued)", after: $0)) }
    }

    /// The batch written in a task of its own, waited for until `deadline`: past it, the batch is given up (its gate
    /// no longer passes) and every entry without an answer yet is answered ``StoreDeadlineExceeded``.
    private static func write(
        _ entries: [Entry], to store: any NotificationStore, owner: String, by deadline: ContinuousClock.Instant,
        timeout: Duration, alarm: DeadlineAlarm, givenUp: GivenUpCount
    ) async -> [Result<AcceptDecision?, any Error>] {
        let attempt = CommitAttempt(count: entries.count)
        let gate = CommitGate(deadline: deadline) { try attempt.passGate() }
        let refusal = StoreDeadlineExceeded("the commit", after: timeout)
        return await withCheckedContinuation { continuation in
            let answer = Mutex<CheckedContinuation<[Result<AcceptDecision?, any Error>], Never>?>(continuation)
            let token = alarm.arm(at: deadline) {
                guard let continuation = answer.withLock({ $0.take() }) else { return }
                let (results, wasCommitting) = attempt.giveUp { index in
                    entries[index].isOutcome ? OutcomeGivenUpWithItsBatch() as any Error : refusal
                }
                if let wasCommitting {
                    givenUp.state.withLock { $0.committing += 1; $0.acceptsMaybeCommitted += wasCommitting.count { entries[$0].isAccept } }
                } else {
                    givenUp.state.withLock { $0.rolledBack += 1 }
                }
                continuation.resume(returning: results)
            }
            Task {
                let results = await write(entries, to: store, owner: owner, attempt: (attempt, gate))
                // Answered: nothing of the batch may commit from now on. A store call that missed its own deadline
                // (a PostgreSQL call's) was answered as failed while its statements may still run and reach the gate.
                attempt.close()
                alarm.disarm(token)
                answer.withLock { $0.take() }?.resume(returning: results)
            }
        }
    }

    /// One transaction for all entries; if it fails, each entry alone, so that one bad entry (a device deleted
    /// meanwhile) fails only its own caller; not when the store did not answer in time. With an attempt, each result is recorded in it as it comes, and nothing
    /// more is tried once it was given up.
    private static func write(
        _ entries: [Entry], to store: any NotificationStore, owner: String, attempt: (CommitAttempt, CommitGate)?
    ) async -> [Result<AcceptDecision?, any Error>] {
        let all = Array(entries.indices)
        do {
            attempt?.0.willCommit(all)
            let results: [Result<AcceptDecision?, any Error>] = try await commit(entries, to: store, owner: owner, gate: attempt?.1)
                .map { .success($0) }
            attempt?.0.record(all, results)
            return results
        } catch where entries.count > 1 && !(error is StoreDeadlineExceeded) {
            var results: [Result<AcceptDecision?, any Error>] = []
            for (index, entry) in entries.enumerated() {
                guard attempt?.0.willCommit([index]) ?? true else {
                    results.append(.failure(CommitAbandoned()))
                    continue
                }
                let result: Result<AcceptDecision?, any Error>
                do { result = .success(try await commit([entry], to: store, owner: owner, gate: attempt?.1)[0]) } catch { result = .failure(error) }
                attempt?.0.record([index], [result])
                results.append(result)
            }
            return results
        } catch {
            // One entry, or a store that did not answer in time (each entry alone would wait as long again).
            let results = entries.map { _ in Result<AcceptDecision?, any Error>.failure(error) }
            attempt?.0.record(all, results)
            return results
        }
    }

    private static func commit(
        _ entries: [Entry], to store: any NotificationStore, owner: String, gate: CommitGate?
    ) async throws -> [AcceptDecision?] {
        var batch = WriteBatch(owner: owner, gate: gate)
        for entry in entries {
            switch entry {
            case .accept(let request): batch.accepts.append(request)
            case .outcome(let outcome): batch.outcomes.append(outcome)
            case .barrier: break
            }
        }
        if batch.accepts.isEmpty, batch.outcomes.isEmpty { return entries.map { _ in nil } }
        var decisions = try await store.commit(batch).makeIterator()
        return entries.map { entry in
            if case .accept = entry { decisions.next() } else { nil }
        }
    }

    /// Batches given up at their deadline since start.
    public struct GivenUp: Sendable, Equatable {
        /// Given up before their store passed the gate: rolled back, nothing written.
        public var rolledBack = 0
        /// Given up after: their COMMIT was on its way and may have landed.
        public var committing = 0
        /// The accepts of those batches, refused although they may be delivered.
        public var acceptsMaybeCommitted = 0

        public init(rolledBack: Int = 0, committing: Int = 0, acceptsMaybeCommitted: Int = 0) {
            self.rolledBack = rolledBack
            self.committing = committing
            self.acceptsMaybeCommitted = acceptsMaybeCommitted
        }
    }
}

private final class GivenUpCount: Sendable {
    let state = Mutex(GroupCommit.GivenUp())
}

extension GroupCommit.Entry {
    fileprivate var isAccept: Bool { if case .accept = self { true } else { false } }
    fileprivate var isOutcome: Bool { if case .outcome = self { true } else { false } }
}

/// An outcome whose batch was given up for another entry's deadline: ``GroupCommit/save(_:mayWait:whenQueued:)``
/// queues it again.
private struct OutcomeGivenUpWithItsBatch: Error {}

/// One batch written under a deadline: which entries have their answer, and whether a commit is on its way (its store
/// passed the gate). The writer's task records; the deadline gives up; each under the lock, so an entry is answered
/// either with what the store said or with the deadline's error, and an entry answered with the error was either
/// never committed (the gate refused) or was in the commit on its way (``giveUp(_:)`` says which).
private final class CommitAttempt: Sendable {
    private struct State {
        var results: [Result<AcceptDecision?, any Error>?]
        /// The entries of the commit being written.
        var writing: [Int] = []
        /// Whether the store passed the gate for `writing`: its COMMIT is on its way.
        var isCommitting = false
        var isGivenUp = false
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count)))
    }

    /// Before a commit of `indices`: false once given up (nothing more is tried).
    @discardableResult
    func willCommit(_ indices: [Int]) -> Bool {
        state.withLock { state in
            guard !state.isGivenUp else { return false }
            state.writing = indices
            state.isCommitting = false
            return true
        }
    }

    /// The store's gate: throws once given up; otherwise the commit goes out.
    func passGate() throws {
        try state.withLock { state in
            guard !state.isGivenUp else { throw CommitAbandoned() }
            state.isCommitting = true
        }
    }

    func record(_ indices: [Int], _ results: [Result<AcceptDecision?, any Error>]) {
        state.withLock { state in
            guard !state.isGivenUp else { return }
            for (offset, index) in indices.enumerated() { state.results[index] = results[min(offset, results.count - 1)] }
            state.writing = []
            state.isCommitting = false
        }
    }

    /// The batch has its answers: the gate refuses from now on (a commit that went out has already passed it).
    func close() {
        state.withLock { $0.isGivenUp = true }
    }

    /// Gives up: every entry without an answer gets its `error`. Returns the entries whose commit was on its way (they
    /// may be committed), or `nil` when none was (whatever was being written is rolled back).
    func giveUp(_ error: (Int) -> any Error) -> (results: [Result<AcceptDecision?, any Error>], wasCommitting: [Int]?) {
        state.withLock { state in
            state.isGivenUp = true
            let results = state.results.enumerated().map { index, result in result ?? .failure(error(index)) }
            return (results, state.isCommitting ? state.writing : nil)
        }
    }
}
