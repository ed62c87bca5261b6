import Synchronization

/// Wakes a waiting loop at once, or lets it sleep until a deadline (``ActivityDispatcher``'s passes): a wake that
/// comes while nobody waits is kept for the next wait, so none is lost and none polls.
///
/// ```swift
/// signal.wake()                          // a change has something to push
/// await signal.wait(upTo: .seconds(2))   // returns at once: the wake above is pending
/// ```
final class ActivityWakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var lastID = 0
        /// A wait whose timer (or cancellation) fired before its continuation was installed.
        var fired: Int?
    }
    private let state = Mutex(State())

    /// Ends the current wait, or the next one at once.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns at a wake (at once when one came since the last wait), after `timeout`, or when the task is cancelled.
    func wait(upTo timeout: Duration) async {
        let id: Int? = state.withLock { state in
            if state.pending {
                state.pending = false
                return nil
            }
            state.lastID += 1
            return state.lastID
        }
        guard let id, !Task.isCancelled else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.end(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.pending || state.fired == id {
                        state.pending = false
                        return true
                    }
                    state.waiter = (id, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            end(id)
        }
        timer.cancel()
    }

    /// Ends the wait `id` (its timer fired, or its task was cancelled).
    private func end(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter, waiter.id == id else {
                state.fired = id
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }
}
