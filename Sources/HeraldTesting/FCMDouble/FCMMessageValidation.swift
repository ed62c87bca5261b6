import Foundation
import HeraldCore

/// A send request's body as the double read it: what it could take from it, and the verdict on it.
struct ParsedSendBody: Sendable {
    /// The `message` object, when there was one.
    var message: JSONObject?
    /// `validate_only`.
    var validateOnly = false
    /// The message's target, when it had exactly one.
    var target: FCMDouble.Target?
    /// Why FCM would refuse the body, `nil` if it would not.
    var refusal: GoogleError?
}

/// Reads a `messages:send` body the way FCM does, in two stages (reference §3):
///
/// 1. The front end turns the JSON into the request message. What it cannot parse (syntax, an unknown field name at
///    the top or in `message`, two targets of the `target` oneof, a value of the wrong type, such as a number in
///    `data`, an unknown `android.priority`, a `ttl` that is not a duration) is answered 400 INVALID_ARGUMENT with a
///    `google.rpc.BadRequest` detail only.
/// 2. FCM checks the message: a target is set, a token looks like one, no reserved data key, `ttl` within four weeks,
///    size. These are answered 400 INVALID_ARGUMENT with the FcmError detail (`errorCode: INVALID_ARGUMENT`).
///
/// Departures from Google, all on the side of refusing: a body with the same key twice in one object is refused
/// (Google keeps the last); a `data` entry's index in `message.data[i].value` counts the keys in sorted order (Google
/// counts them in the body's order; the two agree for clients that sort keys, as Herald's `JSONValue` does).
enum FCMMessageValidation {
    static let requestFields: Set<String> = ["message", "validate_only", "validateOnly"]
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "topic",
        "condition", "fid",
    ]
    /// The fields of the `target` oneof, in sorted order.
    static let targetFields = ["condition", "fid", "token", "topic"]
    /// `AndroidMessagePriority` by name (the front end also takes the lowercase names) or number.
    static let androidPriorities: Set<JSONValue> = ["NORMAL", "HIGH", "normal", "high", 0, 1]
    /// The longest `android.ttl`: four weeks.
    static let maximumTTL: Double = 2_419_200
    static let maximumSize = 4_096
    static let maximumTopicSize = 2_048

    static func parse(_ body: Data) -> ParsedSendBody {
        var parsed = ParsedSendBody()
        parsed.refusal = check(body, into: &parsed)
        return parsed
    }

    /// The answer FCM gives for a registration token it does not accept (FCM's error-code page).
    static let invalidRegistrationToken = GoogleError.invalidMessage(
        "The registration token is not a valid FCM registration token", field: "message.token")

    private static func check(_ body: Data, into parsed: inout ParsedSendBody) -> GoogleError? {
        // 1. Parsing. An empty body is an empty request, as for any proto-JSON API.
        let root: JSONValue
        if body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            root = .object([:])
        } else {
            do {
                root = try JSONValue.decode(body)
            } catch {
                return .unparsable("Invalid JSON payload received. \(error)", field: nil)
            }
        }
        guard case .object(let request) = root else {
            return .unparsable("Invalid JSON payload received. Root element must be a message.", field: nil)
        }
        if let unknown = request.keys.sorted().first(where: { !requestFields.contains($0) }) {
            return .unparsable("Invalid JSON payload received. Unknown name \"\(unknown)\": Cannot find field.", field: nil)
        }
        switch request["validate_only"] ?? request["validateOnly"] ?? .null {
        case .bool(let value): parsed.validateOnly = value
        case .null: break
        case let other: return .invalidValue(at: "validate_only", type: "TYPE_BOOL", value: other)
        }
        let message: JSONObject
        switch request["message"] ?? .null {
        case .object(let object): message = object
        case .null: message = [:]
        case let other:
            return .invalidValue(at: "message", type: "type.googleapis.com/google.firebase.fcm.v1.Message", value: other)
        }
        parsed.message = message
        if let unknown = message.keys.sorted().first(where: { !messageFields.contains($0) }) {
            return .unparsable(
                "Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message': Cannot find field.",
                field: "message")
        }
        let targets = targetFields.filter { message[$0] != nil && message[$0] != .null }
        if targets.count > 1 {
            return .unparsable(
                "Invalid value (oneof), oneof field 'target' is already set. Cannot set '\(targets[1])'", field: "message")
        }
        if let field = targets.first {
            guard case .string(let value) = message[field] else {
                return .invalidValue(at: "message.\(field)", type: "TYPE_STRING", value: message[field] ?? .null)
            }
            parsed.target =
                switch field {
                case "condition": .condition(value)
                case "fid": .fid(value)
                case "token": .token(value)
                default: .topic(value)
                }
        }
        if let refusal = checkStringMap(message["data"], at: "message.data") { return refusal }
        var ttl: Double?
        if let android = message["android"], android != .null {
            guard case .object(let config) = android else {
                return .invalidValue(
                    at: "message.android", type: "type.googleapis.com/google.firebase.fcm.v1.AndroidConfig", value: android)
            }
            if let refusal = checkStringMap(config["data"], at: "message.android.data") { return refusal }
            if let priority = config["priority"], priority != .null, !androidPriorities.contains(priority) {
                return .invalidValue(
                    at: "message.android.priority",
                    type: "type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority", value: priority)
            }
            if let value = config["ttl"], value != .null {
                guard let seconds = value.stringValue.flatMap(durationSeconds) else {
                    return .invalidValue(
                        at: "message.android.ttl", type: "type.googleapis.com/google.protobuf.Duration", value: value)
                }
                ttl = seconds
            }
        }

        // 2. FCM's checks of the message.
        guard let target = parsed.target else {
            return .invalidMessage("Recipient of the message is not set.", field: "message")
        }
        if case .token(let token) = target, !isPlausibleRegistrationToken(token) { return invalidRegistrationToken }
        if let key = message["data"]?.objectValue?.keys.sorted().first(where: isReservedDataKey) {
            return .invalidMessage("Invalid data payload key: \(key)", field: nil)
        }
        if let ttl, !(0...maximumTTL).contains(ttl) {
            return .invalidMessage(
                "Invalid value at 'message.android.ttl': the TTL must be between 0 and 2419200 seconds (4 weeks).",
                field: "message.android.ttl")
        }
        if size(of: message) > sizeLimit(for: target) {
            return .invalidMessage("Message is too big", field: nil)
        }
        return nil
    }

    /// A `map<string, string>` field: an object whose values are all strings. The index in the error counts the
    /// entries in sorted key order (see the type's note).
    private static func checkStringMap(_ value: JSONValue?, at field: String) -> GoogleError? {
        guard let value, value != .null else { return nil }
        guard case .object(let map) = value else {
            return .invalidValue(at: field, type: "map<string, string>", value: value)
        }
        for (index, key) in map.keys.sorted().enumerated() {
            guard let entry = map[key], entry.stringValue == nil else { continue }
            return .invalidValue(at: "\(field)[\(index)].value", type: "TYPE_STRING", value: entry)
        }
        return nil
    }

    /// Reserved data keys (reference §3): `from`, `message_type`, and keys starting `google.` or `gcm.notification.`.
    static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.notification.")
    }

    /// FCM registration tokens are non-empty strings of base64url characters and `:` (e.g. `dXk…:APA91b…`).
    static func isPlausibleRegistrationToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.allSatisfy { CompactJWT.isBase64URL($0) || $0 == UInt8(ascii: ":") }
    }

    /// The seconds of a `google.protobuf.Duration` in JSON (`"3.5s"`, `"0s"`, `"-1s"`), `nil` if malformed.
    static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let unsigned = number.hasPrefix("-") ? number.dropFirst() : number
        let parts = unsigned.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].allSatisfy(\.isASCII),
            parts[0].allSatisfy(\.isNumber), parts.count == 1 || (1...9).contains(parts[1].count),
            parts.count == 1 || parts[1].allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        return Double(number)
    }

    /// The size FCM's limit applies to, as the double measures it: the `message` object without its target field,
    /// re-encoded compactly (sorted keys, no spaces), in bytes. Whitespace in the client's body does not count; the
    /// data, notification and platform blocks do.
    static func size(of message: JSONObject) -> Int {
        var rest = message
        for field in targetFields { rest[field] = nil }
        return ((try? JSONValue.object(rest).encoded()) ?? Data()).count
    }

    /// 4096 bytes, 2048 for messages to topics (a condition addresses topics too).
    static func sizeLimit(for target: FCMDouble.Target) -> Int {
        switch target {
        case .topic, .condition: maximumTopicSize
        case .token, .fid: maximumSize
        }
    }
}
