import Foundation

/// A five-field cron expression (`minute hour day-of-month month day-of-week`), as crontab(5) writes it: each field
/// `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a comma list of those; months `1-12` or `JAN`–`DEC`, days
/// of the week `0-7` (0 and 7 are Sunday) or `SUN`–`SAT`. When both day fields are restricted (neither starts with
/// `*`), a day matches if either matches (crontab's rule).
///
/// ```swift
/// let weekdays = try CronExpression("0 7 * * MON-FRI")   // 07:00 Monday to Friday
/// weekdays.minutes   // [0]
/// ```
public struct CronExpression: Sendable, Equatable {
    public let minutes: [Int]
    public let hours: [Int]
    public let daysOfMonth: Set<Int>
    public let months: Set<Int>
    /// 0 (Sunday) to 6.
    public let daysOfWeek: Set<Int>
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool

    /// Why an expression was refused: the field (`minute`, `hour`, `day of month`, `month`, `day of week`) and the rule.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else { throw ParseError(description: "a cron expression has 5 fields (minute hour day-of-month month day-of-week)") }
        minutes = try Self.field(fields[0], "minute", 0...59).sorted()
        hours = try Self.field(fields[1], "hour", 0...23).sorted()
        daysOfMonth = try Self.field(fields[2], "day of month", 1...31)
        months = try Self.field(fields[3], "month", 1...12, names: Self.monthNames)
        daysOfWeek = Set(try Self.field(fields[4], "day of week", 0...7, names: Self.dayNames).map { $0 % 7 })
        dayOfMonthRestricted = !fields[2].hasPrefix("*")
        dayOfWeekRestricted = !fields[4].hasPrefix("*")
        // A day of the month that no month in the expression has (30 February) would never fire.
        let longest = months.map { Self.longestMonth[$0 - 1] }.max() ?? 31
        if dayOfMonthRestricted, !dayOfWeekRestricted, (daysOfMonth.min() ?? 1) > longest {
            throw ParseError(description: "day of month: no month in the expression has that day")
        }
    }

    /// Whether the expression fires on this civil date (`weekday` 0 = Sunday).
    func matches(month: Int, day: Int, weekday: Int) -> Bool {
        guard months.contains(month) else { return false }
        let dayMatches = daysOfMonth.contains(day)
        let weekdayMatches = daysOfWeek.contains(weekday)
        if dayOfMonthRestricted && dayOfWeekRestricted { return dayMatches || weekdayMatches }
        return dayMatches && weekdayMatches
    }

    /// The shortest time between two fires in local wall-clock time (minutes), at most 1,440 (once a day or less often):
    /// between neighbouring minutes of an hour, and from the last minute of an hour to the first of the next when the
    /// expression has both hours (23 and 0 included: the next day may fire too).
    public var shortestInterval: Int {
        var shortest = 1_440
        for (earlier, later) in zip(minutes, minutes.dropFirst()) { shortest = min(shortest, later - earlier) }
        let hourSet = Set(hours)
        if hours.contains(where: { hourSet.contains(($0 + 1) % 24) }), let first = minutes.first, let last = minutes.last {
            shortest = min(shortest, 60 - last + first)
        }
        return shortest
    }

    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
    static let longestMonth = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    private static func field(_ text: String, _ name: String, _ range: ClosedRange<Int>, names: [String] = []) throws -> Set<Int> {
        var values = Set<Int>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2, let base = pieces.first, !base.isEmpty else { throw ParseError(description: "\(name): \"\(part)\" is not a value") }
            var step = 1
            if pieces.count == 2 {
                guard let parsed = Int(pieces[1]), parsed >= 1, parsed <= range.upperBound + 1 else {
                    throw ParseError(description: "\(name): the step of \"\(part)\" is not a whole number from 1 to \(range.upperBound + 1)")
                }
                step = parsed
            }
            let low: Int
            let high: Int
            if base == "*" {
                (low, high) = (range.lowerBound, range.upperBound)
            } else if let dash = base.firstIndex(of: "-") {
                low = try value(base[..<dash], name, range, names)
                high = try value(base[base.index(after: dash)...], name, range, names)
                guard low <= high else { throw ParseError(description: "\(name): the range \"\(base)\" runs backwards") }
            } else {
                low = try value(base, name, range, names)
                high = pieces.count == 2 ? range.upperBound : low
            }
            values.formUnion(stride(from: low, through: high, by: step))
        }
        return values
    }

    private static func value(_ text: Substring, _ name: String, _ range: ClosedRange<Int>, _ names: [String]) throws -> Int {
        if let index = names.firstIndex(of: text.uppercased()) { return index + (names.count == 12 ? 1 : 0) }
        guard text.count <= 4, text.allSatisfy(\.isASCII), let number = Int(text), range.contains(number) else {
            throw ParseError(description: "\(name): \"\(text)\" is not from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
