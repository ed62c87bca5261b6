import Foundation

/// The source of the current time. Injected everywhere time matters (provider-token age,
/// rate-limit days, retry schedules) so that tests can move it.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A calendar day in UTC, the period of the daily rate limit.
public struct UTCDay: Sendable, Hashable, CustomStringConvertible {
    /// The day as `yyyy-MM-dd`.
    public let description: String
    /// Midnight UTC at the start of this day.
    public let start: Date

    public init(containing date: Date) {
        let seconds = floor(date.timeIntervalSince1970 / 86_400) * 86_400
        start = Date(timeIntervalSince1970: seconds)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: start)
        description = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    /// Midnight UTC at the end of this day, when the daily counters reset.
    public var end: Date { start.addingTimeInterval(86_400) }
}

extension Date {
    /// ISO-8601 with milliseconds and a `Z` zone, e.g. `2019-04-08T00:00:00.000Z`.
    public var iso8601WithMilliseconds: String {
        formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }
}
