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
        var continuation: CheckedContinuation<Turn, Never>?
    }

    private struct State {
        var queue: [Waiting] = []
        var isRunning = false
        var nextTicket: UInt64 = 0
    }

    private let maximumBatch: Int
    private let process: Process
    private let state = Mutex(State())

    /// - Parameter maximumBatch: the most entries one `process` call takes; the rest wait for the next.
    public init(maximumBatch: Int, process: @escaping Process) {
        precondition(maximumBatch > 0, "a batch holds at least one entry")
        self.maximumBatch = maximumBatch
        self.process = process
    }

    /// Entries waiting for a batch that has not started.
    public var waiting: Int {
        state.withLock { state in state.queue.filter { $0.continuation != nil }.count }
    }

    /// Submits one entry; returns its answer once its batch was processed. `whenQueued` runs as soon as the entry is
    /// in the queue, before any batch that holds it starts: anything submitted after it is processed after it.
    public func submit(_ entry: Entry, whenQueued: (@Sendable () -> Void)? = nil) async throws -> Answer {
        var ticket: UInt64 = 0
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let leads = state.withLock { state in
                ticket = state.nextTicket
                state.nextTicket &+= 1
                if state.isRunning {
                    state.queue.append(Waiting(ticket: ticket, entry: entry, continuation: continuation))
                    return false
                }
                state.isRunning = true
                state.queue.append(Waiting(ticket: ticket, entry: entry, continuation: nil))
                return true
            }
            whenQueued?()
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
        let batch = state.withLock { state in
            let count = min(state.queue.count, maximumBatch)
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return batch
        }
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
            // The next leader's own entry stays queued; it takes it with the rest.
            let continuation = state.queue[0].continuation
            state.queue[0].continuation = nil
            return continuation
        }
        next?.resume(returning: .lead)
        guard let mine else { preconditionFailure("the leader's entry is in its own batch") }
        return mine
    }
}
