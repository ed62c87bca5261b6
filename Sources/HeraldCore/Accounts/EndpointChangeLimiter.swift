import Foundation
import Synchronization

/// Caps how many distinct push endpoints one device may name in a rolling window (24 hours): a device re-registered
/// again and again to new Web Push endpoints (each a new host or port for the provider to reach) is refused beyond
/// `maximum`. Naming an endpoint it already named in the window is free.
///
/// At most ``maximumTrackedDevices`` devices are tracked; when that many are, the one whose newest endpoint is the
/// oldest is forgotten first. In memory only, per process.
///
/// ```swift
/// let limiter = EndpointChangeLimiter(maximum: 8, window: 86_400, clock: SystemClock())
/// try limiter.take(deviceID, endpoint: url)   // RegistrationError.endpointLimitReached beyond 8 in 24 hours
/// ```
public final class EndpointChangeLimiter: Sendable {
    public static let maximumTrackedDevices = 10_000

    /// Distinct endpoints per device in ``window``.
    public let maximum: Int
    /// The window, in seconds.
    public let window: TimeInterval
    private let clock: any WallClock
    /// Per device: each endpoint named in the window and when it was first named.
    private let seen = Mutex<[Device.ID: [String: Date]]>([:])

    public init(maximum: Int = 8, window: TimeInterval = 86_400, clock: any WallClock) {
        self.maximum = max(1, maximum)
        self.window = window
        self.clock = clock
    }

    /// Counts `endpoint` for `device`, or throws ``RegistrationError/endpointLimitReached(maximum:retryAfterSeconds:)``
    /// when it is new and the device already named ``maximum`` others in the window.
    public func take(_ device: Device.ID, endpoint: String) throws(RegistrationError) {
        let now = clock.now()
        let window = self.window
        let maximum = self.maximum
        let wait: TimeInterval? = seen.withLock { seen in
            var endpoints = (seen[device] ?? [:]).filter { now.timeIntervalSince($0.value) < window }
            if endpoints[endpoint] == nil {
                guard endpoints.count < maximum else {
                    seen[device] = endpoints
                    let oldest = endpoints.values.min() ?? now
                    return window - now.timeIntervalSince(oldest)
                }
                endpoints[endpoint] = now
            }
            if seen[device] == nil, seen.count >= Self.maximumTrackedDevices,
                let stalest = seen.min(by: { ($0.value.values.max() ?? .distantPast) < ($1.value.values.max() ?? .distantPast) })?.key
            {
                seen[stalest] = nil
            }
            seen[device] = endpoints
            return nil
        }
        if let wait { throw .endpointLimitReached(maximum: maximum, retryAfterSeconds: max(1, Int(wait.rounded(.up)))) }
    }
}
