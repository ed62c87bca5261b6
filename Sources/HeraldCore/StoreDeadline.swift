import Synchronization

/// A store call that did not finish by its deadline (`HERALD_STORE_TIMEOUT_MS`): the database did not answer, or
/// no connection to it came free. The request that waited for it is answered 503 `store_unavailable`.
public struct StoreDeadlineExceeded: Error, Sendable, Equatable, CustomStringConvertible {
    /// What waited: "a connection or a statement", "the commit", "the readiness check".
    public var what: String
    public var after: Duration

    public init(_ what: String, after: Duration) {
        self.what = what
        self.after = after
    }

    public var description: String { "the store did not answer \(what) within \(after)" }
}

/// Deadlines of many waiters, kept by one task that sleeps until the earliest: at a thousand requests a second, a
/// timer task per request (started, then cancelled when the store answered) would cost a thread wake-up each
/// (docs/performance.md). A waiter arms an action and disarms it when it is answered in time; an action that fires
/// runs once, on the alarm's task, and must be quick.
///
/// ```swift
/// let alarm = DeadlineAlarm()
/// let token = alarm.arm(at: .now + .seconds(3)) { giveUp() }
/// defer { alarm.disarm(token) }
/// ```
public final class DeadlineAlarm: Sendable {
    public typealias Action = @Sendable () -> Void

    private struct State {
        var armed: [UInt64: (deadline: ContinuousClock.Instant, action: Action)] = [:]
        var nextToken: UInt64 = 0
        var task: Task<Void, Never>?
        /// The current task's number: a task that was replaced (one that would wake too late) leaves the state alone.
        var generation: UInt64 = 0
        /// When the task wakes next; `nil` while no task runs.
        var wakesAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    public init() {}

    /// Actions armed and not yet fired or disarmed.
    public var armedCount: Int { state.withLock { $0.armed.count } }

    /// Runs `action` at `deadline` unless disarmed first; returns the token that disarms it.
    @discardableResult
    public func arm(at deadline: ContinuousClock.Instant, _ action: @escaping Action) -> UInt64 {
        let (token, stale) = state.withLock { state -> (UInt64, Task<Void, Never>?) in
            let token = state.nextToken
            state.nextToken &+= 1
            state.armed[token] = (deadline, action)
            if let wakesAt = state.wakesAt, wakesAt <= deadline { return (token, nil) }
            // No task, or one that sleeps past this deadline: start one that wakes in time.
            let stale = state.task
            state.wakesAt = deadline
            state.generation &+= 1
            let generation = state.generation
            state.task = Task { await self.run(generation) }
            return (token, stale)
        }
        stale?.cancel()
        return token
    }

    /// Runs every armed action now, as if its deadline had passed: a test decides when a deadline falls instead of
    /// waiting for a machine that may be too busy to keep time.
    public func fireAll() {
        let due = state.withLock { state -> [Action] in
            defer { state.armed = [:] }
            return state.armed.values.map(\.action)
        }
        for action in due { action() }
    }

    /// Forgets an action that has not fired (nothing happens if it fired already).
    public func disarm(_ token: UInt64) {
        state.withLock { _ = $0.armed.removeValue(forKey: token) }
    }

    private func run(_ generation: UInt64) async {
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (due, next) = state.withLock { state -> ([Action], ContinuousClock.Instant?) in
                guard state.generation == generation else { return ([], nil) }
                var due: [Action] = []
                var next: ContinuousClock.Instant?
                for (token, entry) in state.armed {
                    if entry.deadline <= now {
                        due.append(entry.action)
                        state.armed[token] = nil
                    } else if next.map({ entry.deadline < $0 }) ?? true {
                        next = entry.deadline
                    }
                }
                state.wakesAt = next
                if next == nil { state.task = nil }
                return (due, next)
            }
            for action in due { action() }
            guard let next else { return }
            try? await Task.sleep(until: next, clock: .continuous)
        }
    }
}

/// Runs `body` in a task of its own and waits for it until `deadline`: past it, the task is cancelled (PostgresNIO
/// then stops waiting for a connection) and ``StoreDeadlineExceeded`` is thrown at once, whatever the task still does.
/// The body runs apart from the caller's cancellation, as every store call does.
public func withStoreDeadline<Result: Sendable>(
    _ timeout: Duration, what: String, alarm: DeadlineAlarm, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let answer = OnceAnswer<Result>()
    return try await withCheckedThrowingContinuation { continuation in
        answer.set(continuation)
        let token = alarm.arm(at: .now + timeout) {
            if answer.resume(with: .failure(StoreDeadlineExceeded(what, after: timeout))) { answer.cancelTask() }
        }
        answer.setTask(
            Task {
                let result: Swift.Result<Result, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                alarm.disarm(token)
                answer.resume(with: result)
            })
    }
}

/// A continuation answered once, by the body or the deadline, whichever comes first.
private final class OnceAnswer<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var task: Task<Void, Never>?
        var isAnswered = false
    }

    private let state = Mutex(State())

    func set(_ continuation: CheckedContinuation<Value, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func setTask(_ task: Task<Void, Never>) {
        let cancel = state.withLock { state in
            state.task = task
            return state.isAnswered
        }
        if cancel { task.cancel() }
    }

    func cancelTask() {
        state.withLock { $0.task }?.cancel()
    }

    /// Answers the caller unless it was answered; returns whether this call answered it.
    @discardableResult
    func resume(with result: Result<Value, any Error>) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.isAnswered else { return nil }
            state.isAnswered = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
        return continuation != nil
    }
}
