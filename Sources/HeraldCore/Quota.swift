import Foundation

/// A device's daily quota as every send API reports it (`rateLimits`, `RateLimit-*` headers).
public struct QuotaStatus: Sendable, Equatable {
    public var counters: QuotaCounters
    /// The device's daily maximum.
    public var maximum: Int
    /// The next midnight UTC.
    public var resetsAt: Date

    public init(counters: QuotaCounters, maximum: Int, resetsAt: Date) {
        self.counters = counters
        self.maximum = maximum
        self.resetsAt = resetsAt
    }

    /// How many more notifications may be sent today (never negative).
    public var remaining: Int { Swift.max(0, maximum - counters.successful) }
}
