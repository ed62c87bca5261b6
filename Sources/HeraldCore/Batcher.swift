import Synchronization

/// Work from concurrent tasks done in batches: one `process` call for everything that was submitted while the
/// previous batch ran. The group commit (``GroupCommit``) writes its transactions this way, and the SQLite store
/// reads devices this way (one read transaction for the lookups of concurrent requests).
///
/// There is no task of its own. The first caller to find no batch running becomes the leader: it takes everything
/// queued (its own entry included), runs `process` once, answers every caller of that batch, and hands leadership to
/// the first caller that queued meanwhile, which runs the next batch. A caller is answered only once its own entry
/// was processed.
///
/// With ``BatchPatience``, an entry may be submitted as one that can wait (`mayWait`): a batch that would hold only such
/// entries waits for company first, until an entry that cannot wait arrives, enough entries are queued, or the
/// longest delay has passed. The group commit saves delivery outcomes that nobody waits for this way: they ride along
/// with the next accept instead of costing a commit (and an fsync) of their own.
///
/// An entry may have a deadline (``BatchDeadline``): one still queued when it passes is withdrawn, never processed,
/// and its caller gets the deadline's error at once (the group commit's accepts: a request answered 503 is not
/// written later). An entry already taken into a batch is the batch's business.
///
/// ```swift
/// let lookups = Batcher<String, Int?>(maximumBatch: 256) { keys in
///     keys.map { .success(table[$0]) }
/// }
/// let value = try await lookups.submit("key")
/// ```
public final class Batcher<Entry: Sendable, Answer: Sendable>: Sendable {
    /// Runs one batch; answers one result per entry, in the entries' order.
    public typealias Process = @Sendable ([Entry]) async -> [Result<Answer, any Error>]

    private enum Turn: Sendable {
        case done(Result<Answer, any Error>)
        case lead
    }

    private struct Waiting {
        var ticket: UInt64
        var entry: Entry
        var mayWait: Bool
        var continuation: CheckedContinuation<Turn, Never>?
        /// The deadline's alarm, while armed.
        var alarm: UInt64?
    }

    /// A leader holding back its batch for company, since when.
    private enum Company {
        case none
        /// The leader is about to park: an arrival before it does must still count.
        case awaited(since: ContinuousClock.Instant)
        case arrived
        case parked(CheckedContinuation<Void, Never>, since: ContinuousClock.Instant)

        var heldSince: ContinuousClock.Instant? {
            switch self {
            case .awaited(let since), .parked(_, let since): since
            case .none, .arrived: nil
            }
        }
    }

    private struct State {
        var queue: [Waiting] = []
        /// Whether `queue` holds an entry that cannot wait.
        var queueHasUrgent = false
        var isRunning = false
        var nextTicket: UInt64 = 0
        var company = Company.none
        var isDoneHoldingBack = false
        /// The task that wakes a leader that has held back long enough (``Batcher/wakeLeadersThatWaitedLongEnough(_:)``).
        var alarm: Task<Void, Never>?

        /// Whether a batch taken now should hold back for company.
        func shouldWait(_ patience: BatchPatience) -> Bool {
            !isDoneHoldingBack && !queueHasUrgent && queue.count < patience.enoughEntries
        }

        /// The parked leader to wake, if the queue no longer gives it reason to wait.
        mutating func leaderToWake(_ patience: BatchPatience?) -> CheckedContinuation<Void, Never>? {
            guard let patience, !shouldWait(patience) else { return nil }
            return wakeLeader()
        }

        mutating func wakeLeader() -> CheckedContinuation<Void, Never>? {
            switch company {
            case .parked(let leader, _):
                company = .none
                return leader
            case .awaited:
                company = .arrived
                return nil
            case .none, .arrived:
                return nil
            }
        }
    }

    private let maximumBatch: Int
    private let patience: BatchPatience?
    private let process: Process
    private let state = Mutex(State())
    /// The deadlines of queued entries.
    private let deadlines = DeadlineAlarm()

    /// - Parameters:
    ///   - maximumBatch: the most entries one `process` call takes; the rest wait for the next.
    ///   - patience: how a batch of entries submitted with `mayWait` holds back for company; `nil`: never.
    public init(maximumBatch: Int, patience: BatchPatience? = nil, process: @escaping Process) {
        precondition(maximumBatch > 0, "a batch holds at least one entry")
        self.maximumBatch = maximumBatch
        self.patience = patience
        self.process = process
    }

    /// Entries waiting for a batch that has not started.
    public var waiting: Int {
        state.withLock { state in state.queue.filter { $0.continuation != nil }.count }
    }

    /// Whether a batch of entries that may wait is holding back for company.
    public var isHoldingBack: Bool {
        state.withLock { state in
            if case .parked = state.company { true } else { false }
        }
    }

    /// Runs a batch that holds back now, and no batch holds back from now on (at shutdown).
    public func stopHoldingBack() {
        let (leader, alarm) = state.withLock { state in
            state.isDoneHoldingBack = true
            defer { state.alarm = nil }
            return (state.wakeLeader(), state.alarm)
        }
        leader?.resume()
        alarm?.cancel()
    }

    /// Submits one entry; returns its answer once its batch was processed. `whenQueued` runs as soon as the entry is
    /// in the queue, before any batch that holds it starts: anything submitted after it is processed after it.
    /// `mayWait`: the entry's batch may hold back for company (see ``BatchPatience``). `deadline`: past it, an entry
    /// still queued is withdrawn and its error thrown.
    public func submit(
        _ entry: Entry, mayWait: Bool = false, deadline: BatchDeadline? = nil, whenQueued: (@Sendable () -> Void)? = nil
    ) async throws -> Answer {
        var ticket: UInt64 = 0
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let (leads, leader) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                ticket = state.nextTicket
                state.nextTicket &+= 1
                if !mayWait { state.queueHasUrgent = true }
                if state.isRunning {
                    var waiting = Waiting(ticket: ticket, entry: entry, mayWait: mayWait, continuation: continuation)
                    if let deadline {
                        let ticket = ticket
                        waiting.alarm = deadlines.arm(at: deadline.at) { self.withdraw(ticket, error: deadline.error) }
                    }
                    state.queue.append(waiting)
                    return (false, state.leaderToWake(patience))
                }
                state.isRunning = true
                state.queue.append(Waiting(ticket: ticket, entry: entry, mayWait: mayWait, continuation: nil))
                return (true, nil)
            }
            whenQueued?()
            leader?.resume()
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .lead:
            return try await lead(ticket: ticket).get()
        }
    }

    /// Runs one batch as its leader, answers its callers, and passes leadership on.
    private func lead(ticket: UInt64) async -> Result<Answer, any Error> {
        // Let the tasks that are ready to run queue their entries first: it costs a few microseconds and makes the
        // batches of concurrent requests much larger than what happened to arrive during the previous batch.
        await Task.yield()
        if let patience { await waitForCompany(patience) }
        let batch = state.withLock { state in
            let count = min(state.queue.count, maximumBatch)
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            state.queueHasUrgent = state.queue.contains { !$0.mayWait }
            return batch
        }
        for waiting in batch { if let alarm = waiting.alarm { deadlines.disarm(alarm) } }
        let results = await process(batch.map(\.entry))
        precondition(results.count == batch.count, "a batch answers every entry")
        var mine: Result<Answer, any Error>?
        for (waiting, result) in zip(batch, results) {
            if waiting.ticket == ticket {
                mine = result
            } else {
                waiting.continuation?.resume(returning: .done(result))
            }
        }
        let next = state.withLock { state -> CheckedContinuation<Turn, Never>? in
            guard !state.queue.isEmpty else {
                state.isRunning = false
                return nil
            }
            // The next leader's own entry stays queued; it takes it with the rest (and is no longer withdrawn).
            let continuation = state.queue[0].continuation
            state.queue[0].continuation = nil
            if let alarm = state.queue[0].alarm { deadlines.disarm(alarm) }
            state.queue[0].alarm = nil
            return continuation
        }
        next?.resume(returning: .lead)
        guard let mine else { preconditionFailure("the leader's entry is in its own batch") }
        return mine
    }

    /// Withdraws a queued entry whose deadline passed, unless a batch took it (or it leads the next one).
    private func withdraw(_ ticket: UInt64, error: any Error) {
        let continuation = state.withLock { state -> CheckedContinuation<Turn, Never>? in
            guard let index = state.queue.firstIndex(where: { $0.ticket == ticket }),
                let continuation = state.queue[index].continuation
            else { return nil }
            state.queue.remove(at: index)
            state.queueHasUrgent = state.queue.contains { !$0.mayWait }
            return continuation
        }
        continuation?.resume(returning: .done(.failure(error)))
    }

    /// Holds the batch back while it holds only entries that may wait, too few of them, and the delay has not passed.
    /// The delay is kept by one alarm task per batcher, which runs while leaders hold back, rather than a timer task
    /// per held batch: at 1,000 requests a second a batch holds back about every millisecond, and a timer of its own
    /// (started, then cancelled when company came) cost 0.7 thread wake-ups and 4 % of Herald's CPU per notification
    /// (docs/performance.md).
    private func waitForCompany(_ patience: BatchPatience) async {
        let waits = state.withLock { state in
            guard state.shouldWait(patience) else { return false }
            state.company = .awaited(since: .now)
            if state.alarm == nil { state.alarm = Task { await self.wakeLeadersThatWaitedLongEnough(patience) } }
            return true
        }
        guard waits else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (leader: CheckedContinuation<Void, Never>) in
                let arrived = state.withLock { state in
                    switch state.company {
                    case .arrived:
                        state.company = .none
                        return true
                    case .awaited(let since):
                        state.company = .parked(leader, since: since)
                        return false
                    case .none, .parked:
                        preconditionFailure("one leader holds back at a time")
                    }
                }
                if arrived { leader.resume() }
            }
        } onCancel: {
            // A cancelled leader stops holding back at once.
            self.state.withLock { $0.wakeLeader() }?.resume()
        }
    }

    /// What the alarm does next.
    private enum AlarmStep {
        case sleep(Duration)
        /// Nothing holds back: sleep one delay, and end if nothing holds back then either.
        case idle
        case end
    }

    /// The alarm: wakes the leader that holds back once it has waited `maximumDelay`, sleeping until then; ends after
    /// a delay with no leader holding back (the next one to hold back starts it again).
    private func wakeLeadersThatWaitedLongEnough(_ patience: BatchPatience) async {
        var wasIdle = false
        while !Task.isCancelled {
            let (next, leader) = state.withLock { state -> (AlarmStep, CheckedContinuation<Void, Never>?) in
                guard let since = state.company.heldSince else {
                    guard wasIdle else { return (.idle, nil) }
                    state.alarm = nil
                    return (.end, nil)
                }
                let waited = ContinuousClock.now - since
                guard waited >= patience.maximumDelay else { return (.sleep(patience.maximumDelay - waited), nil) }
                return (.sleep(patience.maximumDelay), state.wakeLeader())
            }
            leader?.resume()
            switch next {
            case .sleep(let duration):
                wasIdle = false
                try? await Task.sleep(for: duration)
            case .idle:
                wasIdle = true
                try? await Task.sleep(for: patience.maximumDelay)
            case .end:
                return
            }
        }
    }
}

/// When an entry that is still queued is withdrawn, and the error its caller then gets.
public struct BatchDeadline: Sendable {
    public var at: ContinuousClock.Instant
    public var error: any Error

    public init(at: ContinuousClock.Instant, error: any Error) {
        self.at = at
        self.error = error
    }
}

/// How long a batch of entries that may wait holds back for company.
public struct BatchPatience: Sendable {
    /// The longest a batch of such entries waits before it runs anyway.
    public var maximumDelay: Duration
    /// A batch of such entries runs at once when this many are queued.
    public var enoughEntries: Int

    public init(maximumDelay: Duration, enoughEntries: Int) {
        precondition(enoughEntries > 0, "a batch runs with at least one entry")
        self.maximumDelay = maximumDelay
        self.enoughEntries = enoughEntries
    }
}
