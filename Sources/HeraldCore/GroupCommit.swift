import Foundation
import Synchronization

/// Group commit for the outbox: accepts and delivery outcomes from concurrent tasks are written in batches, one
/// transaction (and one fsync) for everything that arrived while the previous batch was being written.
///
/// There is no writer task. The first caller to find no batch in progress becomes the leader: it takes everything
/// queued (its own entry included), writes it with one ``NotificationStore/commit(_:)``, answers every caller of that
/// batch, and hands leadership to the first caller that queued meanwhile, which writes the next batch. A caller is
/// answered only once its own entry is durable.
///
/// ```swift
/// let commit = GroupCommit(store: store, owner: "instance-1")
/// let decision = try await commit.accept(AcceptRequest(notification: n, quota: quota))
/// try await commit.save(DeliveryOutcome(notification: delivered))
/// ```
public final class GroupCommit: Sendable {
    /// Counters of what was written (tests, benchmarks and logs read them).
    public struct Statistics: Sendable, Equatable {
        /// Transactions committed.
        public var commits = 0
        /// Accepts and outcomes written.
        public var entries = 0
        /// The largest batch so far.
        public var largestBatch = 0
    }

    private enum Entry: Sendable {
        case accept(AcceptRequest)
        case outcome(DeliveryOutcome)
    }

    private enum Turn: Sendable {
        case written(Result<AcceptDecision?, any Error>)
        case lead
    }

    private struct Waiting {
        var ticket: UInt64
        var entry: Entry
        var continuation: CheckedContinuation<Turn, Never>?
    }

    private struct State {
        var queue: [Waiting] = []
        var isWriting = false
        var nextTicket: UInt64 = 0
        var statistics = Statistics()
    }

    /// The most entries one transaction takes; the rest wait for the next.
    public static let maximumBatch = 1_024

    private let store: any NotificationStore
    private let owner: String
    private let metrics: DeliveryMetrics
    private let state = Mutex(State())

    public init(store: any NotificationStore, owner: String, metrics: DeliveryMetrics = .init()) {
        self.store = store
        self.owner = owner
        self.metrics = metrics
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Accepts one notification; returns once it is durable (or refused for the quota).
    public func accept(_ request: AcceptRequest) async throws -> AcceptDecision {
        guard let decision = try await submit(.accept(request)) else { preconditionFailure("an accept has a decision") }
        return decision
    }

    /// Saves one delivery outcome; returns once it is durable.
    public func save(_ outcome: DeliveryOutcome) async throws {
        _ = try await submit(.outcome(outcome))
    }

    private func submit(_ entry: Entry) async throws -> AcceptDecision? {
        var ticket: UInt64 = 0
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let leads = state.withLock { state in
                ticket = state.nextTicket
                state.nextTicket &+= 1
                if state.isWriting {
                    state.queue.append(Waiting(ticket: ticket, entry: entry, continuation: continuation))
                    return false
                }
                state.isWriting = true
                state.queue.append(Waiting(ticket: ticket, entry: entry, continuation: nil))
                return true
            }
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .written(let result):
            return try result.get()
        case .lead:
            return try await lead(ticket: ticket).get()
        }
    }

    /// Writes one batch as its leader, answers its callers, and passes leadership on.
    private func lead(ticket: UInt64) async -> Result<AcceptDecision?, any Error> {
        // Let the tasks that are ready to run queue their entries first: it costs a few microseconds and makes the
        // batches of concurrent requests much larger than what happened to arrive during the previous commit.
        await Task.yield()
        let batch = state.withLock { state in
            let count = min(state.queue.count, Self.maximumBatch)
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return batch
        }
        let started = ContinuousClock.now
        let results = await write(batch.map(\.entry))
        metrics.recordCommit(entries: batch.count, duration: ContinuousClock.now - started)
        var mine: Result<AcceptDecision?, any Error> = .success(nil)
        for (waiting, result) in zip(batch, results) {
            if waiting.ticket == ticket {
                mine = result
            } else {
                waiting.continuation?.resume(returning: .written(result))
            }
        }
        let next = state.withLock { state -> CheckedContinuation<Turn, Never>? in
            state.statistics.commits += 1
            state.statistics.entries += batch.count
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            guard !state.queue.isEmpty else {
                state.isWriting = false
                return nil
            }
            // The next leader's own entry stays queued; it takes it with the rest.
            let continuation = state.queue[0].continuation
            state.queue[0].continuation = nil
            return continuation
        }
        next?.resume(returning: .lead)
        return mine
    }

    /// One transaction for all entries; if it fails, each entry alone, so that one bad entry (a device deleted
    /// meanwhile) fails only its own caller.
    private func write(_ entries: [Entry]) async -> [Result<AcceptDecision?, any Error>] {
        do {
            return try await commit(entries).map { .success($0) }
        } catch where entries.count > 1 {
            var results: [Result<AcceptDecision?, any Error>] = []
            for entry in entries {
                do { results.append(.success(try await commit([entry])[0])) } catch { results.append(.failure(error)) }
            }
            return results
        } catch {
            return [.failure(error)]
        }
    }

    private func commit(_ entries: [Entry]) async throws -> [AcceptDecision?] {
        var batch = WriteBatch(owner: owner)
        for entry in entries {
            switch entry {
            case .accept(let request): batch.accepts.append(request)
            case .outcome(let outcome): batch.outcomes.append(outcome)
            }
        }
        var decisions = try await store.commit(batch).makeIterator()
        return entries.map { entry in
            if case .accept = entry { decisions.next() } else { nil }
        }
    }
}
