import Foundation
import HeraldCore

/// Typed reads of content members, each refusing a value of the wrong type or out of range with 422
/// `activity.content_invalid` and the member's location (`body.content.tiles[2].label`).
struct ContentReader {
    let object: JSONObject
    let path: String

    init(_ object: JSONObject, path: String = "body.content") {
        self.object = object
        self.path = path
    }

    func location(_ key: String) -> String { "\(path).\(key)" }

    func fail(_ key: String, _ detail: String) -> ActivityProblem {
        .contentInvalid(detail, location: location(key))
    }

    func isPresent(_ key: String) -> Bool { object[key].map { $0 != .null } ?? false }

    func string(_ key: String, maxLength: Int? = nil, minLength: Int = 0, required: Bool = false) throws(ActivityProblem) -> String? {
        guard let value = object[key], value != .null else {
            if required { throw fail(key, "\(key) is required") }
            return nil
        }
        guard let text = value.stringValue else { throw fail(key, "\(key) must be a string") }
        // Bytes first (cheap, and bounds the character count's work): a character is a grapheme, and one grapheme
        // can be any number of bytes.
        let maxBytes = ContentLimits.maximumBytes(forCharacters: maxLength)
        if text.utf8.count > maxBytes { throw fail(key, "\(key) must be at most \(maxBytes) bytes of UTF-8, got \(text.utf8.count)") }
        // A grapheme is at least one scalar: counting scalars (no grapheme breaking) settles most strings.
        if let maxLength, text.unicodeScalars.count > maxLength, text.count > maxLength {
            throw fail(key, "\(key) must be at most \(maxLength) characters, got \(text.count)")
        }
        if minLength > 0, minLength == 1 ? text.isEmpty : text.count < minLength {
            throw fail(key, "\(key) must be at least \(minLength) characters")
        }
        return text
    }

    func oneOf(_ key: String, _ allowed: [String], required: Bool = false) throws(ActivityProblem) -> String? {
        guard let text = try string(key, required: required) else { return nil }
        guard allowed.contains(text) else { throw fail(key, "\(key) must be one of \(allowed.joined(separator: ", ")), got \"\(text)\"") }
        return text
    }

    func number(_ key: String, in range: ClosedRange<Double>? = nil, required: Bool = false) throws(ActivityProblem) -> Double? {
        guard let value = object[key], value != .null else {
            if required { throw fail(key, "\(key) is required") }
            return nil
        }
        guard let number = value.doubleValue else { throw fail(key, "\(key) must be a number") }
        if let range, !range.contains(number) {
            throw fail(key, "\(key) must be between \(decimal(range.lowerBound)) and \(decimal(range.upperBound)), got \(String(format: "%f", number))")
        }
        return number
    }

    func integer(_ key: String, in range: ClosedRange<Int>? = nil, required: Bool = false) throws(ActivityProblem) -> Int? {
        guard let value = object[key], value != .null else {
            if required { throw fail(key, "\(key) is required") }
            return nil
        }
        guard let integer = value.integerValue else { throw fail(key, "\(key) must be an integer") }
        if let range, !range.contains(integer) { throw fail(key, "\(key) must be between \(range.lowerBound) and \(range.upperBound), got \(integer)") }
        return integer
    }

    func bool(_ key: String) throws(ActivityProblem) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let flag) = value else { throw fail(key, "\(key) must be a boolean") }
        return flag
    }

    func array(_ key: String, count range: ClosedRange<Int>? = nil, required: Bool = false) throws(ActivityProblem) -> [JSONValue]? {
        guard let value = object[key], value != .null else {
            if required { throw fail(key, "\(key) is required") }
            return nil
        }
        guard let elements = value.arrayValue else { throw fail(key, "\(key) must be an array") }
        if let range, !range.contains(elements.count) {
            throw fail(key, "\(key) must have \(range.lowerBound) to \(range.upperBound) entries, got \(elements.count)")
        }
        return elements
    }

    func objectMember(_ key: String, required: Bool = false) throws(ActivityProblem) -> JSONObject? {
        guard let value = object[key], value != .null else {
            if required { throw fail(key, "\(key) is required") }
            return nil
        }
        guard let member = value.objectValue else { throw fail(key, "\(key) must be an object") }
        return member
    }

    /// The entries of an array of objects, each as a reader at `key[index]`.
    func objects(_ key: String, count range: ClosedRange<Int>? = nil, required: Bool = false) throws(ActivityProblem) -> [ContentReader] {
        guard let elements = try array(key, count: range, required: required) else { return [] }
        var readers: [ContentReader] = []
        for (index, element) in elements.enumerated() {
            guard let member = element.objectValue else { throw fail("\(key)[\(index)]", "\(key)[\(index)] must be an object") }
            readers.append(ContentReader(member, path: location("\(key)[\(index)]")))
        }
        return readers
    }

    private func decimal(_ value: Double) -> String {
        value == value.rounded() ? String(format: "%.1f", value) : String(value)
    }
}

/// Byte limits beside the character limits: a string member of at most N characters is also at most 4 × N bytes of
/// UTF-8 (every character of one code point fits; a long combining sequence does not), one without a character limit
/// at most ``defaultStringBytes``; the content as stored at most ``maximumContentBytes``; a log backlog at most
/// ``LogBacklog/maximumBytes``.
public enum ContentLimits {
    /// Bytes per character allowed: the longest UTF-8 encoding of one code point.
    public static let bytesPerCharacter = 4
    /// A string member without a character limit of its own (a color, an icon name, an unknown member's text).
    public static let defaultStringBytes = 1_024
    /// The content of one activity as stored, timeline history left out (it has its own bound): room for a log's 20
    /// lines of 2,048 bytes and the rest, while members the schemas do not name cannot pile up across patches.
    public static let maximumContentBytes = 65_536

    static func maximumBytes(forCharacters characters: Int?) -> Int {
        characters.map { $0 * bytesPerCharacter } ?? defaultStringBytes
    }

    /// Whether `text` is within `characters` characters and their bytes.
    static func fits(_ text: String, characters: Int) -> Bool {
        text.utf8.count <= characters * bytesPerCharacter && text.count <= characters
    }
}

/// The rules of an action object (`tap_action`, `url_action`, `secondary_url_action`, a tile's `url_action`, a media
/// control).
enum ActionRules {
    static let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
    static let refusedSchemes: Set<String> = ["javascript", "data", "file", "vbscript"]

    /// Checks `reader.object[key]` as an action; `isControl` refuses `foreground: true` (a media control).
    static func check(_ reader: ContentReader, _ key: String, isControl: Bool = false, iconRequired: Bool = false) throws(ActivityProblem) {
        guard let action = try reader.objectMember(key) else { return }
        let member = ContentReader(action, path: reader.location(key))
        let known: Set<String> = ["url", "foreground", "method", "headers", "body", "title", "icon"]
        if let unknown = action.keys.sorted().first(where: { !known.contains($0) }) {
            throw member.fail(unknown, "unknown action field \"\(unknown)\"")
        }
        guard let url = try member.string("url", maxLength: 2_048, required: true) else { return }
        try checkURL(url, member)
        let foreground = try member.bool("foreground")
        if isControl, foreground == true { throw member.fail("foreground", "a media control cannot open in the foreground") }
        _ = try member.oneOf("method", methods)
        if let headers = try member.objectMember("headers") {
            var total = 0
            for (name, value) in headers {
                guard let text = value.stringValue else { throw member.fail("headers", "headers must map names to strings") }
                total += name.utf8.count + text.utf8.count
            }
            if total > 1_024 { throw member.fail("headers", "headers must be at most 1024 bytes in all, got \(total)") }
        }
        _ = try member.string("body", maxLength: 1_024)
        _ = try member.string("title", maxLength: 64)
        _ = try member.string("icon", maxLength: 64, required: iconRequired)
    }

    /// Any scheme but `javascript:`, `data:`, `file:`, `vbscript:`; http(s) with a host.
    static func checkURL(_ url: String, _ member: ContentReader) throws(ActivityProblem) {
        guard let colon = url.firstIndex(of: ":"), colon != url.startIndex else { throw member.fail("url", "url must have a scheme") }
        let scheme = url[..<colon].lowercased()
        guard scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }) else {
            throw member.fail("url", "url must have a scheme")
        }
        if refusedSchemes.contains(scheme) { throw member.fail("url", "url scheme \(scheme): is not allowed") }
        if scheme == "http" || scheme == "https" {
            guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
                throw member.fail("url", "an http(s) url must have a host")
            }
        }
    }

    /// Whether an action's URL is http(s) (a silent webhook on a media control).
    static func isHTTP(_ action: JSONObject) -> Bool {
        guard let url = action["url"]?.stringValue?.lowercased() else { return false }
        return url.hasPrefix("http://") || url.hasPrefix("https://")
    }
}

/// `duration`: integer seconds, or a string of seconds (`"1500"`) or units (`"30s"`, `"5m"`, `"1h30m"`, `"2d"`), at most
/// ``ActivityLimits/maximumDuration`` in all; every step of the sum is overflow-checked, so no count of digits or parts
/// can trap.
enum DurationText {
    /// Why a duration is refused.
    enum Refusal: Error { case malformed, tooLong }

    static func seconds(_ value: JSONValue) throws(Refusal) -> Int {
        let limit = ActivityLimits.maximumDuration
        if let integer = value.integerValue {
            guard integer > 0 else { throw .malformed }
            guard integer <= limit else { throw .tooLong }
            return integer
        }
        if let number = value.doubleValue { throw number > Double(limit) ? .tooLong : .malformed }
        guard let text = value.stringValue?.trimmingCharacters(in: .whitespaces), !text.isEmpty, text.utf8.count <= 64 else {
            throw .malformed
        }
        var total = 0
        var amount: Int?
        for character in text {
            if character.isASCII, let digit = character.wholeNumberValue {
                // Digits beyond the limit are refused at once, so the running amount never overflows.
                let next = (amount ?? 0) * 10 + digit
                guard next <= limit else { throw .tooLong }
                amount = next
                continue
            }
            guard let value = amount else { throw .malformed }
            let unit: Int
            switch character {
            case "d": unit = 86_400
            case "h": unit = 3_600
            case "m": unit = 60
            case "s": unit = 1
            default: throw .malformed
            }
            let (part, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow, part <= limit - total else { throw .tooLong }
            total += part
            amount = nil
        }
        if let amount {
            guard total == 0 else { throw .malformed }  // "1h30": a trailing number without its unit
            total = amount
        }
        guard total > 0 else { throw .malformed }
        return total
    }
}
