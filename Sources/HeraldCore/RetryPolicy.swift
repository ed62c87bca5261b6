import Foundation

/// When a transiently failed delivery is tried again: exponential back-off with jitter,
/// never earlier than the provider asked, never past the notification's expiry.
public struct RetryPolicy: Sendable, Equatable {
    /// Delay before the second attempt.
    public var initialDelay: TimeInterval
    /// The longest delay between two attempts.
    public var maximumDelay: TimeInterval

    public init(initialDelay: TimeInterval = 2, maximumDelay: TimeInterval = 600) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The delay after `attempts` failed attempts: `initialDelay × 2^(attempts-1)`, capped, then scaled by a random
    /// factor in [0.5, 1] ("equal jitter") so that retries of many notifications spread out.
    public func delay(afterAttempts attempts: Int, providerMinimum: TimeInterval? = nil) -> TimeInterval {
        delay(afterAttempts: attempts, providerMinimum: providerMinimum, jitter: Double.random(in: 0.5...1))
    }

    /// The delay after `attempts` failed attempts with a given random factor `jitter` (in [0.5, 1]; clamped).
    public func delay(afterAttempts attempts: Int, providerMinimum: TimeInterval?, jitter: Double) -> TimeInterval {
        let exponent = Double(Swift.min(Swift.max(attempts - 1, 0), 30))
        let capped = Swift.min(initialDelay * pow(2, exponent), maximumDelay)
        let jittered = capped * Swift.min(Swift.max(jitter, 0.5), 1)
        return Swift.max(jittered, providerMinimum ?? 0)
    }
}
