import Synchronization

/// Admits at most as many reads at once as the pool has reader connections; the others wait as suspended tasks.
///
/// GRDB's `DatabasePool.read` waits for a free reader by blocking a dispatch thread (one per pool). A reader comes back
/// when the task holding it goes on, which takes a dispatch thread too, and a process has at most 255 of those. A full
/// test run (hundreds of stores at once, each busy with more reads than readers) filled all 255 with pools waiting for
/// readers whose tasks then could not go on: the whole process stopped. With the gate in front, no thread ever waits
/// for a reader. One store per process (a server) was far from the limit; the gate costs a lock per read.
final class ReaderGate: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
        var nextWaiting = 0
    }

    private let state: Mutex<State>

    init(readers: Int) {
        state = Mutex(State(free: readers))
    }

    /// Runs `body` once a reader is free for it.
    func admit<T>(_ body: () async throws -> T) async rethrows -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.nextWaiting < state.waiting.count else {
                state.free += 1
                return nil
            }
            let next = state.waiting[state.nextWaiting]
            state.nextWaiting += 1
            if state.nextWaiting > 64, state.nextWaiting * 2 > state.waiting.count {
                state.waiting.removeFirst(state.nextWaiting)
                state.nextWaiting = 0
            }
            return next
        }
        next?.resume()
    }
}
