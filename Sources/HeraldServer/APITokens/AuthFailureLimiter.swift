import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Synchronization

/// Slows down credential guessing: counts authentication failures per client address in fixed one-minute windows.
/// Once an address has failed ``maximumFailures`` times in its window, every authenticated request from it is
/// answered 429 with `Retry-After` until the window ends, whatever credentials it carries.
///
/// A window starts at the first failure; addresses whose window has ended are forgotten. Kept in memory only:
/// a restart forgets everything, and each Herald process counts on its own.
///
/// ```swift
/// let device = try await limiter.guarding(context.clientKey) { try await directory.owner(of: request) }
/// ```
final class AuthFailureLimiter: Sendable {
    /// Failures allowed per window; the next request is refused.
    static let maximumFailures = 10
    /// The length of a window.
    static let window: TimeInterval = 60
    /// How many addresses are remembered at most; beyond that the oldest windows are dropped.
    static let maximumTrackedAddresses = 10_000

    private struct Window {
        var start: Date
        var failures: Int
    }

    private let clock: any WallClock
    private let windows = Mutex<[String: Window]>([:])

    init(clock: any WallClock) {
        self.clock = clock
    }

    /// Runs `authenticate` for a request from `client` unless the client is locked out (429). An `APIError` it
    /// throws (other than 503, the store being down) counts as a failure.
    func guarding<Value>(_ client: String, _ authenticate: () async throws -> Value) async throws -> Value {
        try checkAllowed(client)
        do {
            return try await authenticate()
        } catch let error as APIError where error.status != .serviceUnavailable {
            recordFailure(client)
            throw error
        }
    }

    /// Throws 429 when `client` used up its failures in the current window.
    func checkAllowed(_ client: String) throws {
        let now = clock.now()
        let retryAfter: Int? = windows.withLock { windows in
            guard let window = windows[client] else { return nil }
            let end = window.start.addingTimeInterval(Self.window)
            if now >= end {
                windows[client] = nil
                return nil
            }
            guard window.failures >= Self.maximumFailures else { return nil }
            return max(1, Int(end.timeIntervalSince(now).rounded(.up)))
        }
        if let retryAfter {
            throw APIError(
                .tooManyRequests, code: "too_many_auth_failures",
                message: "Too many failed authentication attempts from this address; try again in \(retryAfter) seconds.",
                headers: [.retryAfter: "\(retryAfter)"])
        }
    }

    /// Counts one failure of `client`.
    func recordFailure(_ client: String) {
        let now = clock.now()
        windows.withLock { windows in
            if var window = windows[client], now < window.start.addingTimeInterval(Self.window) {
                window.failures += 1
                windows[client] = window
                return
            }
            if windows.count >= Self.maximumTrackedAddresses {
                windows = windows.filter { now < $0.value.start.addingTimeInterval(Self.window) }
                while windows.count >= Self.maximumTrackedAddresses,
                    let oldest = windows.min(by: { $0.value.start < $1.value.start })?.key
                {
                    windows[oldest] = nil
                }
            }
            windows[client] = Window(start: now, failures: 1)
        }
    }
}
