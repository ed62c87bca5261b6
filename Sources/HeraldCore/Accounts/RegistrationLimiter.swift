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

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    /// Registrations per minute and address; `nil` for no limit.
    public let perMinute: Int?
    private let clock: any WallClock
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(perMinute: Int?, clock: any WallClock) {
        self.perMinute = perMinute.flatMap { $0 > 0 ? $0 : nil }
        self.clock = clock
    }

    /// Takes one registration from `client`'s bucket, or throws ``RegistrationError/rateLimited(retryAfterSeconds:)``
    /// with the seconds until one is there again.
    public func take(_ client: String) throws(RegistrationError) {
        guard let perMinute else { return }
        let capacity = Double(perMinute)
        let perSecond = capacity / 60
        let now = clock.now()
        let wait: Double? = buckets.withLock { buckets in
            func level(_ bucket: Bucket) -> Double {
                min(capacity, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * perSecond)
            }
            var bucket = buckets[client].map { Bucket(tokens: level($0), updated: now) } ?? Bucket(tokens: capacity, updated: now)
            guard bucket.tokens >= 1 else {
                buckets[client] = bucket
                return (1 - bucket.tokens) / perSecond
            }
            bucket.tokens -= 1
            if buckets[client] == nil, buckets.count >= Self.maximumTrackedAddresses {
                buckets = buckets.filter { level($0.value) < capacity }
                while buckets.count >= Self.maximumTrackedAddresses,
                    let fullest = buckets.max(by: { level($0.value) < level($1.value) })?.key
                {
                    buckets[fullest] = nil
                }
            }
            buckets[client] = bucket
            return nil
        }
        if let wait { throw .rateLimited(retryAfterSeconds: max(1, Int(wait.rounded(.up)))) }
    }
}
