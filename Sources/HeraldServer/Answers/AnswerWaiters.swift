import Foundation
import HeraldCore
import ServiceLifecycle
import Synchronization

/// The long polls of `GET /notifications/answers/{id}?wait=N` (``AnswerWaiters``), of
/// `GET /notifications/receipts/{id}?wait=N` (``ReceiptWaiters``) and of `GET /activities/{slug}?wait=N`
/// (``ApprovalWaiters``, keyed by device and slug): each waiter is a parked continuation, not a thread, woken when
/// what it waits for lands (``read`` finds a value for its key), when its time is up, or at once when the server shuts
/// down.
///
/// - An answer reported to this instance wakes its waiters directly (``answered(_:)``).
/// - With several instances on one PostgreSQL database (``init(store:pollInterval:)`` with an interval), this service
///   reads the answers of every notification waited on here in one query per interval (1 s by default), so a waiter
///   learns of an answer another instance took within about that interval. With one instance nothing is polled.
/// - At graceful shutdown each waiter answers at once with what the store says then.
///
/// ```swift
/// let answer = try await waiters.wait(for: id, upTo: .seconds(25))   // nil: still pending
/// ```
final class LongPollWaiters<Key: Hashable & Sendable, Value: Sendable>: Service, Sendable {
    private enum Slot {
        case registered
        case parked(CheckedContinuation<Void, Never>)
        case woken
    }

    private struct State {
        var waiters: [Key: [Int: Slot]] = [:]
        var nextKey = 0
    }

    /// What has landed for those of the ids that have something (an answer, an ended receipt).
    private let read: @Sendable ([Key]) async throws -> [Key: Value]
    private let pollInterval: Duration?
    private let state = Mutex(State())
    private let deadlines = DeadlineAlarm()

    init(pollInterval: Duration? = nil, read: @escaping @Sendable ([Key]) async throws -> [Key: Value]) {
        self.read = read
        self.pollInterval = pollInterval
    }

    /// How many requests are waiting now (tests wait for theirs to park before they answer).
    var count: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }

    /// What landed for `id`, waiting up to `duration` for it; `nil` when nothing has by then.
    func wait(for id: Key, upTo duration: Duration) async throws -> Value? {
        let key = register(id)
        defer { unregister(id, key) }
        // Registered before this read: an answer that lands after it wakes the slot.
        if let value = try await read([id])[id] { return value }
        guard duration > .zero else { return nil }
        // One alarm task for every waiter's time, not a sleeping task each (measured: docs/performance.md, "Answer
        // long polls").
        let timer = deadlines.arm(at: .now + duration) { [weak self] in self?.wake(id, key) }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in park(id, key, continuation) }
            } onCancel: {
                wake(id, key)
            }
        } onGracefulShutdown: {
            self.wake(id, key)
        }
        deadlines.disarm(timer)
        return try await read([id])[id]
    }

    /// What `id` waits for landed on this instance (an answer recorded, a receipt ended): its waiters wake.
    func answered(_ id: Key) {
        let keys = state.withLock { Array(($0.waiters[id] ?? [:]).keys) }
        for key in keys { wake(id, key) }
    }

    /// Polls the store for answers taken by other instances, when there are several; otherwise waits for the shutdown
    /// (a service that returns would end the application).
    func run() async throws {
        guard let pollInterval else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: pollInterval)
                let ids = self.state.withLock { Array($0.waiters.keys) }
                guard !ids.isEmpty, let landed = try? await self.read(ids) else { continue }
                for id in landed.keys { self.answered(id) }
            }
        }
    }

    private func register(_ id: Key) -> Int {
        state.withLock { state in
            let key = state.nextKey
            state.nextKey += 1
            state.waiters[id, default: [:]][key] = .registered
            return key
        }
    }

    private func unregister(_ id: Key, _ key: Int) {
        state.withLock { state in
            state.waiters[id]?[key] = nil
            if state.waiters[id]?.isEmpty == true { state.waiters[id] = nil }
        }
    }

    private func park(_ id: Key, _ key: Int, _ continuation: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { state -> Bool in
            guard case .registered? = state.waiters[id]?[key] else { return true }  // woken already
            state.waiters[id]?[key] = .parked(continuation)
            return false
        }
        if resumeNow { continuation.resume() }
    }

    private func wake(_ id: Key, _ key: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let slot = state.waiters[id]?[key] else { return nil }
            state.waiters[id]?[key] = .woken
            if case .parked(let continuation) = slot { return continuation }
            return nil
        }
        continuation?.resume()
    }
}

/// The answers' long polls.
typealias AnswerWaiters = LongPollWaiters<PushNotification.ID, NotificationAnswer>

extension LongPollWaiters where Key == PushNotification.ID, Value == NotificationAnswer {
    convenience init(store: any AfterPushStore, pollInterval: Duration? = nil) {
        self.init(pollInterval: pollInterval) { ids in try await store.answers(of: ids) }
    }
}
