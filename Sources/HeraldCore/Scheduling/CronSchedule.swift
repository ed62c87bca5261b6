import Foundation

/// When a ``CronExpression`` fires in a time zone: the wall-clock times it names, turned into instants.
///
/// Daylight-saving changes (the rule, documented in docs/api.md, "Scheduled notifications"):
/// - **A time that does not exist** (02:30 on a spring-forward day, when clocks go from 02:00 to 03:00): the send goes
///   out once, shifted forward by the length of the gap (03:30), as the wall clock would read had it not jumped. When the
///   expression also names that shifted time, it still goes out once.
/// - **A time that exists twice** (01:30 on a fall-back day, when clocks go from 02:00 back to 01:00): the send goes out
///   once, at the first occurrence (01:30 daylight time), never again an hour later.
///
/// ```swift
/// let schedule = try CronSchedule(expression: CronExpression("30 2 * * *"), timeZone: #require(TimeZone(identifier: "Europe/Berlin")))
/// let next = schedule.nextFire(after: clock.now())   // nil when it never fires again
/// ```
public struct CronSchedule: Sendable, Equatable {
    public let expression: CronExpression
    public let timeZone: TimeZone
    /// Dates searched before giving up (an expression may fire only on 29 February, with leap years up to 8 years apart).
    static let searchDays = 8 * 366 + 1

    public init(expression: CronExpression, timeZone: TimeZone) {
        self.expression = expression
        self.timeZone = timeZone
    }

    /// The first fire strictly after `date`; `nil` when there is none within eight years.
    public func nextFire(after date: Date) -> Date? {
        let after = date.timeIntervalSince1970
        let localNow = after + Double(timeZone.secondsFromGMT(for: date))
        // A day earlier than the local date: a shifted or repeated time may fall on the local day before.
        let firstDay = Int((localNow / 86_400).rounded(.down)) - 1
        for day in firstDay..<(firstDay + Self.searchDays) {
            let (_, month, dayOfMonth) = civil(fromDays: day)
            let weekday = ((day % 7) + 11) % 7  // 1970-01-01 (day 0) was a Thursday (4)
            guard expression.matches(month: month, day: dayOfMonth, weekday: weekday) else { continue }
            var earliest: Double?
            for hour in expression.hours {
                for minute in expression.minutes {
                    let instant = self.instant(localSeconds: Double(day * 86_400 + hour * 3_600 + minute * 60))
                    if instant > after, instant < (earliest ?? .infinity) { earliest = instant }
                }
            }
            if let earliest { return Date(timeIntervalSince1970: earliest) }
        }
        return nil
    }

    /// The instant a wall-clock time (seconds since 1970 as if the zone were UTC) stands for: the first of two when it
    /// exists twice; shifted forward by the gap when it does not exist.
    func instant(localSeconds local: Double) -> Double {
        let before = Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: local - 86_400)))
        let after = Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: local + 86_400)))
        let candidates = [before, after].map { local - $0 }.filter {
            Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: $0))) == local - $0
        }
        if let first = candidates.min() { return first }
        // In the gap: with the offset in force before it, the instant reads as the time shifted by the gap.
        return local - before
    }
}

/// The civil date (proleptic Gregorian) of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
    let shifted = days + 719_468
    let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
}
