import Foundation

/// How many subscribe messages one WebSocket may still send: a token bucket that holds ``burst`` subscribes and
/// refills at `perMinute`. Each subscribe is a credential check and a store write, so a socket that repeats them is
/// answered `too_many_subscribes` once its burst is spent, until the bucket has refilled one.
///
/// A plain value: the socket's ``WebSocketSession`` hands it to its ``WebSocketMessageHandler`` with each message (messages are
/// answered one at a time) and keeps what comes back.
///
/// ```swift
/// var budget = SubscribeBudget(perMinute: 6)
/// guard budget.take(at: clock.now()) else { /* answer too_many_subscribes */ }
/// ```
package struct SubscribeBudget: Sendable, Equatable {
    /// Subscribes a fresh socket may send at once.
    package static let burst = 5

    /// Subscribes per minute once the burst is spent; 0: no limit.
    package let perMinute: Int
    private var tokens = Double(SubscribeBudget.burst)
    private var updated: Date?

    package init(perMinute: Int) {
        self.perMinute = perMinute
    }

    /// Takes one subscribe at `now`; false when none is left (nothing is taken then).
    package mutating func take(at now: Date) -> Bool {
        guard perMinute > 0 else { return true }
        if let updated {
            let refill = max(0, now.timeIntervalSince(updated)) * Double(perMinute) / 60
            tokens = min(Double(Self.burst), tokens + refill)
        }
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
