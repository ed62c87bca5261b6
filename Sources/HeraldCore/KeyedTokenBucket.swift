import Foundation
import Synchronization

/// Token buckets by key (a client address, an API token): each holds `capacity` takes and refills at `perSecond`;
/// at most `maximumKeys` are tracked (full buckets are dropped first, then the fullest). The registration and the
/// activity-write limits are both this rule with their own numbers and errors.
///
/// ```swift
/// let buckets = KeyedTokenBucket<String>(capacity: 10, perSecond: 10.0 / 60, maximumKeys: 10_000, clock: clock)
/// if let wait = buckets.take("203.0.113.7") { throw .rateLimited(retryAfterSeconds: Int(wait.rounded(.up))) }
/// ```
public final class KeyedTokenBucket<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    public let capacity: Double
    public let perSecond: Double
    public let maximumKeys: Int
    private let clock: any WallClock
    private let buckets = Mutex<[Key: Bucket]>([:])

    /// `capacity` and `perSecond` must be positive (the callers' configuration checks them).
    public init(capacity: Double, perSecond: Double, maximumKeys: Int, clock: any WallClock) {
        self.capacity = capacity
        self.perSecond = perSecond
        self.maximumKeys = maximumKeys
        self.clock = clock
    }

    /// Takes one from `key`'s bucket; returns `nil`, or the seconds until one is there again (nothing taken).
    public func take(_ key: Key) -> Double? {
        let (capacity, perSecond, maximumKeys, now) = (capacity, perSecond, maximumKeys, clock.now())
        return buckets.withLock { buckets in
            func level(_ bucket: Bucket) -> Double {
                min(capacity, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * perSecond)
            }
            var bucket = buckets[key].map { Bucket(tokens: level($0), updated: now) } ?? Bucket(tokens: capacity, updated: now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return (1 - bucket.tokens) / perSecond
            }
            bucket.tokens -= 1
            if buckets[key] == nil, buckets.count >= maximumKeys {
                buckets = buckets.filter { level($0.value) < capacity }
                while buckets.count >= maximumKeys, let fullest = buckets.max(by: { level($0.value) < level($1.value) })?.key {
                    buckets[fullest] = nil
                }
            }
            buckets[key] = bucket
            return nil
        }
    }
}
