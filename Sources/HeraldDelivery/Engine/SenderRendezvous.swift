import Foundation
import HeraldCore
import Synchronization

/// Senders waiting for the first attempt of the notification they sent, each until its deadline
/// (``DeliveryEngine/Configuration/deliveryWait``): answered with the attempt's report when it comes in time, with
/// `nil` when the deadline passes first (``answerOverdue(at:)``, called every tick) or the engine stops.
final class SenderRendezvous: Sendable {
    private typealias Waiter = (continuation: CheckedContinuation<AttemptReport?, Never>, deadline: ContinuousClock.Instant)

    private struct State {
        var waiters: [PushNotification.ID: Waiter] = [:]
        var isStopping = false
    }

    private let state = Mutex(State())

    /// Registers a wait for `id`, runs `start` (which begins the attempt) and waits for the answer.
    func wait(for id: PushNotification.ID, until deadline: ContinuousClock.Instant, start: () -> Void) async -> AttemptReport? {
        await withCheckedContinuation { continuation in
            let waits = state.withLock { state in
                guard !state.isStopping else { return false }
                state.waiters[id] = (continuation, deadline)
                return true
            }
            start()
            if !waits { continuation.resume(returning: nil) }
        }
    }

    /// Whether a sender waits for this notification (an outcome nobody waits for may hold back for a later commit).
    func isWaiting(for id: PushNotification.ID) -> Bool {
        state.withLock { $0.waiters[id] != nil }
    }

    /// Answers the sender waiting for this notification, if one still waits; `report` is `nil` when the attempt's
    /// outcome could not be saved.
    func answer(_ id: PushNotification.ID, with report: AttemptReport?) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(returning: report)
    }

    /// Answers `nil` to the senders whose deadline passed.
    func answerOverdue(at now: ContinuousClock.Instant) {
        let overdue = state.withLock { state -> [CheckedContinuation<AttemptReport?, Never>] in
            guard !state.waiters.isEmpty else { return [] }
            let ids = state.waiters.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
        }
        for waiter in overdue { waiter.resume(returning: nil) }
    }

    /// Answers every waiting sender with `nil` and takes no more waits.
    func stop() {
        let waiters = state.withLock { state in
            state.isStopping = true
            defer { state.waiters = [:] }
            return state.waiters.values.map { $0.continuation }
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }
}
