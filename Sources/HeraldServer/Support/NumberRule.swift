import Foundation

/// The one rule for a number a client sends that Herald turns into an integer or does arithmetic on: it must be
/// finite, whole where a whole number is meant, and in range *before* it is converted or added, so that no input can
/// trap (`Int(1e300)` and `Int.max + 1` end the process). A refusal is the dialect's 400 naming the member; the
/// caller throws it in its own shape.
///
/// ```swift
/// guard let critical = NumberRule.wholeNumber(towardZero: 1e300) else { throw ... }   // nil: out of Int's range
/// guard let end = NumberRule.unixSeconds(now, plus: offset) else { throw ... }        // nil: before 1970 or after 9999
/// ```
enum NumberRule {
    /// 9999-12-31T23:59:59Z, the latest date a member of Herald's may name (ISO 8601's four-digit years, and what
    /// the platforms' date types show).
    static let latestUnixSeconds = 253_402_300_799

    /// `value` cut to a whole number toward zero (JavaScript's `parseInt` of a number), or `nil` when that is not
    /// finite or does not fit an `Int`.
    static func wholeNumber(towardZero value: Double) -> Int? {
        guard value.isFinite else { return nil }
        return Int(exactly: value.rounded(.towardZero))
    }

    /// `now` plus `offset` seconds (rounded down, as the relay's `Math.floor`), when the sum is a Unix time from
    /// 1970 to ``latestUnixSeconds``; `nil` otherwise (also for an offset that is not finite).
    static func unixSeconds(_ now: Int, plus offset: Double) -> Int? {
        guard offset.isFinite, abs(offset) <= Double(latestUnixSeconds), let whole = Int(exactly: offset.rounded(.down)) else {
            return nil
        }
        let (sum, overflow) = now.addingReportingOverflow(whole)
        guard !overflow, (0...latestUnixSeconds).contains(sum) else { return nil }
        return sum
    }
}
