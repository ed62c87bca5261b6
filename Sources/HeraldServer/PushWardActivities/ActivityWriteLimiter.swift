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

    let burst: Int
    let perSecond: Double
    private let buckets: KeyedTokenBucket<UUID>

    init(burst: Int = defaultBurst, perSecond: Double = defaultPerSecond, clock: any WallClock) {
        self.burst = max(1, burst)
        self.perSecond = perSecond > 0 ? perSecond : Self.defaultPerSecond
        buckets = KeyedTokenBucket(
            capacity: Double(self.burst), perSecond: self.perSecond, maximumKeys: Self.maximumTrackedTokens, clock: clock)
    }

    /// Takes one write from `token`'s bucket, or throws 429 with the milliseconds until one is there again.
    func take(_ token: UUID) throws(ActivityProblem) {
        guard let wait = buckets.take(token) else { return }
        throw .rateLimited(retryAfterMilliseconds: max(1, Int((wait * 1_000).rounded(.up))))
    }
}
