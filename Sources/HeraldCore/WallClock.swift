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
        let days = Int(floor(date.timeIntervalSince1970 / 86_400))
        start = Date(timeIntervalSince1970: Double(days) * 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm): no Calendar per call.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        description = "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
    }

    /// Midnight UTC at the end of this day, when the daily counters reset.
    public var end: Date { start.addingTimeInterval(86_400) }
}

extension Date {
    /// ISO-8601 with milliseconds and a `Z` zone, e.g. `2019-04-08T00:00:00.000Z`; fractions of a millisecond are
    /// cut off. By arithmetic, as ``UTCDay`` is: every send answer carries one (`resetsAt`), and Foundation's
    /// `ISO8601FormatStyle` with a `TimeZone` per call cost more than the rest of the answer's body.
    public var iso8601WithMilliseconds: String {
        let milliseconds = unixMilliseconds
        let dayStart = Self.floorDivision(milliseconds, 86_400_000)
        let rest = milliseconds - dayStart * 86_400_000
        let day = UTCDay(containing: Date(timeIntervalSince1970: Double(dayStart) * 86_400))
        let time =
            "\(padded(rest / 3_600_000, 2)):\(padded(rest / 60_000 % 60, 2)):\(padded(rest / 1_000 % 60, 2))"
            + ".\(padded(rest % 1_000, 3))"
        return "\(day.description)T\(time)Z"
    }

    /// Whole milliseconds since 1970, fractions cut off; to the nearest microsecond first, so that a whole
    /// millisecond stored as 1.2339999… s stays 1.234.
    var unixMilliseconds: Int {
        Self.floorDivision(Int((timeIntervalSince1970 * 1_000_000).rounded()), 1_000)
    }

    private static func floorDivision(_ value: Int, _ divisor: Int) -> Int {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }
}

/// `value` in decimal with leading zeros up to `width` digits.
private func padded(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}
