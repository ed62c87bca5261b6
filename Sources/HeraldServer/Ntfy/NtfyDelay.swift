import Foundation
import HeraldCore

/// ntfy's scheduled delivery (`X-Delay` and its aliases `Delay`, `X-At`, `At`, `X-In`, `In`; JSON `delay`), read as
/// ntfy's `ParseFutureTime` reads it: a Unix timestamp (`1639194738`) or a duration (`30m`, `3h`, `2 days`, `10 seconds`),
/// between 10 seconds and 3 days ahead (ntfy's default `message-delay-limit`). ntfy's natural-language times (`10am`,
/// `tomorrow, 3pm`) are refused with a 400 that says so: they depend on a time zone the request does not name.
/// Refusals carry ntfy's own codes (40004 unparsable, 40005 too soon, 40006 too far ahead).
enum NtfyDelay {
    static let minimum: TimeInterval = 10
    static let maximum: TimeInterval = 3 * 86_400

    /// When the message goes out.
    static func sendAt(_ raw: String, now: Date) throws -> Date {
        let text = raw.trimmingCharacters(in: .whitespaces).lowercased()
        let date: Date
        if let seconds = unixTime(text) {
            date = Date(timeIntervalSince1970: TimeInterval(seconds))
        } else if let seconds = duration(text) {
            date = now.addingTimeInterval(TimeInterval(seconds))
        } else {
            throw refusal(
                40004,
                "delay must be a Unix timestamp or a duration such as 30m, 3h or 2 days; Herald does not read times such as 10am or tomorrow.")
        }
        let ahead = date.timeIntervalSince(now)
        guard ahead >= minimum else { throw refusal(40005, "delay must be at least 10 seconds ahead.") }
        guard ahead <= maximum else { throw refusal(40006, "delay must be at most 3 days ahead.") }
        return date
    }

    /// A Unix timestamp: at most 12 decimal digits (past year 33,000), so that no value can overflow.
    static func unixTime(_ text: String) -> Int? {
        guard (1...12).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// ntfy's duration (`(\d+)\s*(d|days?|h|hours?|m|mins?|minutes?|s|secs?|seconds?)`) in seconds; at most 6 digits, so
    /// that the product cannot overflow.
    static func duration(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard (1...6).contains(digits.count), let count = Int(digits) else { return nil }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
        let seconds: Int
        switch unit {
        case "d", "day", "days": seconds = 86_400
        case "h", "hour", "hours": seconds = 3_600
        case "m", "min", "mins", "minute", "minutes": seconds = 60
        case "s", "sec", "secs", "second", "seconds": seconds = 1
        default: return nil
        }
        return count * seconds
    }

    private static func refusal(_ code: Int, _ message: String) -> APIError {
        var error = APIError.invalidField("delay", message)
        error.extra["ntfy_code"] = .int(code)
        return error
    }
}
