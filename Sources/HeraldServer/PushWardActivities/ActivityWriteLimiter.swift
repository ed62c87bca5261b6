import Foundation
import HeraldActivities
import HeraldCore
import Synchronization

/// Limits activity writes (POST, PATCH, DELETE, snooze of PushWard's `/activities`) per API token: a token bucket that
/// holds ``burst`` writes and refills at ``perSecond``; an empty bucket answers 429 `rate_limit.exceeded` with
/// `retry_after_ms` and `Retry-After`. One client writing as fast as it can then costs the shared store a bounded
/// share, whatever its activities hold. Reads are not limited.
///
/// At most ``maximumTrackedTokens`` buckets are kept (full ones are dropped first, then the fullest). In memory, per
/// process.
///
/// ```swift
/// let limiter = ActivityWriteLimiter(clock: SystemClock())
/// try limiter.take(token.id)   // ActivityProblem.rateLimited(retryAfterMilliseconds:) when the bucket is empty
/// ```
final class ActivityWriteLimiter: Sendable {
    /// Writes a token may make at once (60: a device may create its 50 activities in one go).
    static let defaultBurst = 60
    /// Writes per second a token may keep up (10: PushWard's own per-activity pace is one a second).
    static let defaultPerSecond = 10.0
    static let maximumTrackedTokens = 10_000

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    let burst: Int
    let perSecond: Double
    private let clock: any WallClock
    private let buckets = Mutex<[UUID: Bucket]>([:])

    init(burst: Int = defaultBurst, perSecond: Double = defaultPerSecond, clock: any WallClock) {
        self.burst = max(1, burst)
        self.perSecond = perSecond > 0 ? perSecond : Self.defaultPerSecond
        self.clock = clock
    }

    /// Takes one write from `token`'s bucket, or throws 429 with the milliseconds until one is there again.
    func take(_ token: UUID) throws(ActivityProblem) {
        let (capacity, perSecond, now) = (Double(burst), perSecond, clock.now())
        let wait: Double? = buckets.withLock { buckets in
            func level(_ bucket: Bucket) -> Double {
                min(capacity, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * perSecond)
            }
            var bucket = buckets[token].map { Bucket(tokens: level($0), updated: now) } ?? Bucket(tokens: capacity, updated: now)
            guard bucket.tokens >= 1 else {
                buckets[token] = bucket
                return (1 - bucket.tokens) / perSecond
            }
            bucket.tokens -= 1
            if buckets[token] == nil, buckets.count >= Self.maximumTrackedTokens {
                buckets = buckets.filter { level($0.value) < capacity }
                while buckets.count >= Self.maximumTrackedTokens, let fullest = buckets.max(by: { level($0.value) < level($1.value) })?.key {
                    buckets[fullest] = nil
                }
            }
            buckets[token] = bucket
            return nil
        }
        if let wait { throw .rateLimited(retryAfterMilliseconds: max(1, Int((wait * 1_000).rounded(.up)))) }
    }
}
