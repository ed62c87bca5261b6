import ServiceLifecycle
import Synchronization

/// When a background service runs its passes: one at start, then one every `interval`, and one within about 20 ms of
/// ``wake()``; the loop ends at graceful shutdown (the pass under way is cancelled). The retention sweeper and the
/// dispatchers of scheduled sends and receipts run on it.
public final class PassLoop: Sendable {
    private let woken = Atomic(false)

    public init() {}

    /// Makes the next pass run now.
    public func wake() { woken.store(true, ordering: .relaxed) }

    public func run(every interval: Duration, _ pass: @escaping @Sendable () async -> Void) async {
        await cancelWhenGracefulShutdown {
            var lastPass: ContinuousClock.Instant?
            while !Task.isCancelled {
                if self.woken.exchange(false, ordering: .relaxed) || lastPass.map({ .now - $0 >= interval }) ?? true {
                    lastPass = .now
                    await pass()
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }
}
