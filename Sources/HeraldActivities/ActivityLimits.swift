import Foundation

/// The numeric bounds of PushWard's activity contract that Herald checks before any arithmetic, so that no value a
/// client sends (or a row stored before these checks) can overflow: dates are Unix seconds from 1970 to the end of
/// year 9999, `duration` at most 157,788,000 s (5 years, openapi.yaml's `ContentCountdown.duration`).
///
/// ```swift
/// let end = try ActivityLimits.adding(seconds, to: nowSeconds, location: "body.content.duration")
/// ```
public enum ActivityLimits {
    /// `9999-12-31T23:59:59Z`: the latest date any date member (`start_date`, `end_date`, `fired_at`, a log line's
    /// `at`, `position_at`, a history point's `timestamp`) may name.
    public static let latestUnixSeconds = 253_402_300_799
    /// Most seconds `duration` may be (openapi.yaml: 157788000).
    public static let maximumDuration = 157_788_000
    /// Unix seconds a date member may take.
    public static let unixSeconds: ClosedRange<Int> = 0...latestUnixSeconds

    /// `base + seconds` when it is a date Herald accepts (at most year 9999); else 422 `activity.content_invalid` at
    /// `location`. Overflow-checked, so stored values from before these rules cannot trap either.
    static func adding(_ seconds: Int, to base: Int, location: String) throws(ActivityProblem) -> Int {
        let (sum, overflow) = base.addingReportingOverflow(seconds)
        guard !overflow, unixSeconds.contains(sum) else {
            throw .contentInvalid("the resulting date lies beyond 9999-12-31T23:59:59Z", location: location)
        }
        return sum
    }
}
