import Foundation
import HeraldCore

/// The JavaScript value rules that Home Assistant's relay (Node.js) applies to what Home Assistant sends, and the
/// conversion firebase-admin applies to its `ApnsPayload` before FCM hands it to APNs. Herald builds the APNs payload
/// itself, so it applies both: the phone gets the bytes the relay's path would have given it.
enum RelayRules {
    /// JavaScript truthiness: absent, `null`, `false`, `0`, `NaN` and `""` are false; everything else (also `{}` and
    /// `[]`) is true.
    static func isTruthy(_ value: JSONValue?) -> Bool {
        switch value {
        case nil, .null?: false
        case .bool(let bool)?: bool
        case .int(let int)?: int != 0
        case .double(let double)?: double != 0 && !double.isNaN
        case .string(let string)?: !string.isEmpty
        case .array?, .object?: true
        }
    }

    /// `Number(value)`, `parseFloat` or `parseInt` as the relay uses them: a number, or a string holding one.
    /// Anything else (which the relay would turn into `NaN`, and APNs refuse) is a 400 naming `path`; so is a
    /// `wholeNumber` that does not fit a 64-bit integer (`1e300`, which JavaScript would keep and APNs refuse).
    static func number(_ value: JSONValue, path: String, wholeNumber: Bool = false) throws -> JSONValue {
        let double: Double
        switch value {
        case .int: return value
        case .double(let number): double = number
        case .string(let text):
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if let int = Int(trimmed) { return .int(int) }
            guard let number = Double(trimmed), number.isFinite else {
                throw APIError.invalidField(path, "\(path) must be a number.")
            }
            double = number
        default:
            throw APIError.invalidField(path, "\(path) must be a number.")
        }
        guard wholeNumber else { return .double(double) }
        guard let whole = NumberRule.wholeNumber(towardZero: double) else {
            throw APIError.invalidField(path, "\(path) must be a whole number from \(Int.min) to \(Int.max).")
        }
        return .int(whole)
    }

    /// The name of a sound file without its folder and last extension (Node's `path.parse(name).name`), for
    /// macOS 10.15, which plays sounds by name only.
    static func soundName(withoutExtension name: String) -> String {
        let file = name.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? name
        guard let dot = file.lastIndex(of: "."), dot != file.startIndex else { return file }
        return String(file[..<dot])
    }

    // MARK: firebase-admin's ApnsPayload → APNs JSON

    private static let apsRenames = ["contentAvailable": "content-available", "mutableContent": "mutable-content", "threadId": "thread-id"]
    private static let alertRenames = [
        "locKey": "loc-key", "locArgs": "loc-args", "titleLocKey": "title-loc-key", "titleLocArgs": "title-loc-args",
        "subtitleLocKey": "subtitle-loc-key", "subtitleLocArgs": "subtitle-loc-args", "actionLocKey": "action-loc-key",
        "launchImage": "launch-image",
    ]

    /// `aps` as firebase-admin writes it for APNs (`validateAps` in its `messaging-internal`): camel-case keys get
    /// their APNs spelling; `content-available`, `mutable-content` and a sound's `critical` become `1` when `true`
    /// and disappear unless `1`; a sound object needs a `volume` from 0 to 1 (Herald gives a nameless one the name
    /// `default`, where the SDK refuses it).
    static func apsOnTheWire(_ original: JSONObject, path: String = "data.push") throws -> JSONObject {
        var aps = original
        for (camel, wire) in apsRenames.sorted(by: { $0.key < $1.key }) where aps[camel] != nil {
            if aps[wire] != nil {
                throw APIError.invalidField("\(path).\(camel)", "\(path) sets both \(camel) and \(wire); give one.")
            }
            aps[wire] = aps.removeValue(forKey: camel)
        }
        for flag in ["content-available", "mutable-content"] { aps[flag] = oneOrNothing(aps[flag]) }
        if case .object(var alert)? = aps["alert"] {
            for (camel, wire) in alertRenames where alert[camel] != nil && alert[wire] == nil {
                alert[wire] = alert.removeValue(forKey: camel)
            }
            aps["alert"] = .object(alert)
        }
        if case .object(var sound)? = aps["sound"] {
            if sound["name"]?.stringValue?.isEmpty ?? true { sound["name"] = "default" }
            if let volume = sound["volume"] {
                guard let level = volume.doubleValue, (0...1).contains(level) else {
                    throw APIError.invalidField("\(path).sound.volume", "\(path).sound.volume must be a number from 0 to 1.")
                }
            }
            sound["critical"] = oneOrNothing(sound["critical"])
            aps["sound"] = .object(sound)
        }
        return aps
    }

    /// `1` for `1` or `true`, nothing otherwise (firebase-admin's rule for its boolean APNs flags).
    private static func oneOrNothing(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case .int(1)?, .bool(true)?: .int(1)
        case .double(1)?: .int(1)
        default: nil
        }
    }
}
