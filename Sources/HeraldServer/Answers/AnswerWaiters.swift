import Foundation
import HeraldCore
import ServiceLifecycle
import Synchronization

/// The long polls of `GET /notifications/answers/{id}?wait=N`: each waiter is a parked continuation, not a thread,
/// woken when the answer lands, when its time is up, or at once when the server shuts down.
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
final class AnswerWaiters: Service, Sendable {
    private enum Slot {
        case registered
        case parked(CheckedContinuation<Void, Never>)
        case woken
    }

    private struct State {
        var waiters: [PushNotification.ID: [Int: Slot]] = [:]
        var nextKey = 0
    }

    private let store: any AfterPushStore
    private let pollInterval: Duration?
    private let state = Mutex(State())

    init(store: any AfterPushStore, pollInterval: Duration? = nil) {
        self.store = store
        self.pollInterval = pollInterval
    }

    /// How many requests are waiting now (tests wait for theirs to park before they answer).
    var count: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }

    /// The notification's answer, waiting up to `duration` for one; `nil` when there is none by then.
    func wait(for id: PushNotification.ID, upTo duration: Duration) async throws -> NotificationAnswer? {
        let key = register(id)
        defer { unregister(id, key) }
        // Registered before this read: an answer that lands after it wakes the slot.
        if let answer = try await store.answers(of: [id])[id] { return answer }
        guard duration > .zero else { return nil }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: duration)
            self?.wake(id, key)
        }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in park(id, key, continuation) }
            } onCancel: {
                wake(id, key)
            }
        } onGracefulShutdown: {
            self.wake(id, key)
        }
        timer.cancel()
        return try await store.answers(of: [id])[id]
    }

    /// An answer was recorded on this instance: its waiters wake.
    func answered(_ id: PushNotification.ID) {
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
                guard !ids.isEmpty, let answers = try? await self.store.answers(of: ids) else { continue }
                for id in answers.keys { self.answered(id) }
            }
        }
    }

    private func register(_ id: PushNotification.ID) -> Int {
        state.withLock { state in
            let key = state.nextKey
            state.nextKey += 1
            state.waiters[id, default: [:]][key] = .registered
            return key
        }
    }

    private func unregister(_ id: PushNotification.ID, _ key: Int) {
        state.withLock { state in
            state.waiters[id]?[key] = nil
            if state.waiters[id]?.isEmpty == true { state.waiters[id] = nil }
        }
    }

    private func park(_ id: PushNotification.ID, _ key: Int, _ continuation: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { state -> Bool in
            guard case .registered? = state.waiters[id]?[key] else { return true }  // woken already
            state.waiters[id]?[key] = .parked(continuation)
            return false
        }
        if resumeNow { continuation.resume() }
    }

    private func wake(_ id: PushNotification.ID, _ key: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let slot = state.waiters[id]?[key] else { return nil }
            state.waiters[id]?[key] = .woken
            if case .parked(let continuation) = slot { return continuation }
            return nil
        }
        continuation?.resume()
    }
}
