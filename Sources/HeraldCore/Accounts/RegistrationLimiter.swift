import Foundation
import Synchronization

/// Limits how many new devices (new USER_IDs) one client address may register: a token bucket per address that
/// holds `perMinute` registrations and refills at `perMinute` a minute. A re-registration with a USER_ID's own
/// credentials is counted when it changes the device's token (``DeviceRegistrar/reregister(_:to:client:logger:)``),
/// not when it repeats it.
///
/// At most ``maximumTrackedAddresses`` buckets are kept; when that many are there, full buckets (which mean the same
/// as no bucket) are dropped first, then the fullest. In memory only, per process.
///
/// ```swift
/// let limiter = RegistrationLimiter(perMinute: 20, clock: SystemClock())
/// try limiter.take(client)   // RegistrationError.rateLimited(retryAfterSeconds:) when the bucket is empty
/// ```
public final class RegistrationLimiter: Sendable {
    public static let maximumTrackedAddresses = 10_000

    public let perMinute: Int?
    private let buckets: KeyedTokenBucket<String>?

    public init(perMinute: Int?, clock: any WallClock) {
        let perMinute = perMinute.flatMap { $0 > 0 ? $0 : nil }
        self.perMinute = perMinute
        buckets = perMinute.map {
            KeyedTokenBucket(capacity: Double($0), perSecond: Double($0) / 60, maximumKeys: Self.maximumTrackedAddresses, clock: clock)
        }
    }

    /// Takes one registration from `client`'s bucket, or throws ``RegistrationError/rateLimited(retryAfterSeconds:)``
    /// with the seconds until one is there again.
    public func take(_ client: String) throws(RegistrationError) {
        guard let wait = buckets?.take(client) else { return }
        throw .rateLimited(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
    }
}
