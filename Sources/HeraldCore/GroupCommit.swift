import Foundation

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
/// ```swift
/// let commit = GroupCommit(store: store, owner: "instance-1")
/// let decision = try await commit.accept(AcceptRequest(notification: n, quota: quota))
/// try await commit.save(DeliveryOutcome(notification: delivered))
/// ```
public final class GroupCommit: Sendable {
    private enum Entry: Sendable {
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

    private let batcher: Batcher<Entry, AcceptDecision?>
    private let store: any NotificationStore

    /// - Parameter patience: how outcomes that nobody waits for hold back for company; `nil`: never.
    public init(
        store: any NotificationStore, owner: String, metrics: DeliveryMetrics = .init(),
        patience: BatchPatience? = GroupCommit.defaultPatience
    ) {
        self.store = store
        batcher = Batcher(maximumBatch: Self.maximumBatch, patience: patience) { entries in
            let started = ContinuousClock.now
            let results = await Self.write(entries, to: store, owner: owner)
            let writes = entries.count { if case .barrier = $0 { false } else { true } }
            if writes > 0 { metrics.recordCommit(entries: writes, duration: ContinuousClock.now - started) }
            return results
        }
    }

    /// Accepts one notification; returns once it is durable (or refused for the quota).
    public func accept(_ request: AcceptRequest) async throws -> AcceptDecision {
        guard let decision = try await batcher.submit(.accept(request)) else { preconditionFailure("an accept has a decision") }
        return decision
    }

    /// Saves one delivery outcome; returns once it is durable. `whenQueued` runs as soon as the outcome is queued:
    /// from then on, ``notification(id:)`` sees it. `mayWait`: nobody waits for this outcome to be durable, so its
    /// commit may wait for company (up to the patience's delay).
    public func save(
        _ outcome: DeliveryOutcome, mayWait: Bool = false, whenQueued: (@Sendable () -> Void)? = nil
    ) async throws {
        _ = try await batcher.submit(.outcome(outcome), mayWait: mayWait, whenQueued: whenQueued)
    }

    /// Commits held-back outcomes now, and holds none back from now on (at shutdown).
    public func stopHoldingBackOutcomes() {
        batcher.stopHoldingBack()
    }

    /// One notification as it stands once every write queued before this call is durable: a sender who was answered
    /// before its notification's outcome was written reads that outcome.
    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        _ = try await batcher.submit(.barrier)
        return try await store.notification(id: id)
    }

    /// One transaction for all entries; if it fails, each entry alone, so that one bad entry (a device deleted
    /// meanwhile) fails only its own caller.
    private static func write(
        _ entries: [Entry], to store: any NotificationStore, owner: String
    ) async -> [Result<AcceptDecision?, any Error>] {
        do {
            return try await commit(entries, to: store, owner: owner).map { .success($0) }
        } catch where entries.count > 1 {
            var results: [Result<AcceptDecision?, any Error>] = []
            for entry in entries {
                do { results.append(.success(try await commit([entry], to: store, owner: owner)[0])) } catch { results.append(.failure(error)) }
            }
            return results
        } catch {
            return [.failure(error)]
        }
    }

    private static func commit(
        _ entries: [Entry], to store: any NotificationStore, owner: String
    ) async throws -> [AcceptDecision?] {
        var batch = WriteBatch(owner: owner)
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
}
