import Foundation
import HeraldCore

/// A field of a merge patch: left out (keep), `null` (clear) or a value (set).
public enum FieldPatch<Value: Sendable & Equatable>: Sendable, Equatable {
    case keep
    case clear
    case set(Value)

    /// The value after applying this patch to `current`.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .keep: current
        case .clear: nil
        case .set(let value): value
        }
    }
}

/// `POST /activities`: create an activity, or refresh the name, priority and TTLs of an existing one.
public struct ActivityCreateRequest: Sendable, Equatable {
    public var slug: String
    public var name: String
    public var priority: Int?
    public var endedTTL: Int?
    public var staleTTL: Int?
    public var dismissalTTL: Int?

    public init(slug: String, name: String, priority: Int? = nil, endedTTL: Int? = nil, staleTTL: Int? = nil, dismissalTTL: Int? = nil) {
        self.slug = slug
        self.name = name
        self.priority = priority
        self.endedTTL = endedTTL
        self.staleTTL = staleTTL
        self.dismissalTTL = dismissalTTL
    }
}

/// The target state a `PATCH` asks for (a client can ask for `ongoing` or `ended`, never `preempted`).
public enum ActivityTargetState: String, Sendable, Equatable {
    case ongoing
    case ended
}

/// `PATCH /activities/{slug}`: an RFC 7396 merge patch onto an activity.
public struct ActivityPatch: Sendable, Equatable {
    /// The state asked for; `nil` keeps the stored one (refused for a preempted activity).
    public var state: ActivityTargetState?
    /// The content merge patch as sent (members set to `null` remove); `nil` when the patch has no `content`.
    public var content: JSONObject?
    /// A new priority, 0–10.
    public var priority: Int?
    /// The alert sound; makes the update alerting (APNs priority 10). Request-scoped, never stored.
    public var sound: String?
    public var endedTTL: FieldPatch<Int>
    public var staleTTL: FieldPatch<Int>
    public var dismissalTTL: FieldPatch<Int>

    public init(
        state: ActivityTargetState? = nil, content: JSONObject? = nil, priority: Int? = nil, sound: String? = nil, endedTTL: FieldPatch<Int> = .keep,
        staleTTL: FieldPatch<Int> = .keep, dismissalTTL: FieldPatch<Int> = .keep
    ) {
        self.state = state
        self.content = content
        self.priority = priority
        self.sound = sound
        self.endedTTL = endedTTL
        self.staleTTL = staleTTL
        self.dismissalTTL = dismissalTTL
    }
}

/// Decoding and shape-checking the bodies of the activity paths, as openapi.yaml describes them: 400 for a body that
/// is not JSON or has the wrong shape (`request.body_invalid`, `request.body_required`, `activity.state_invalid`,
/// `activity.priority_invalid`, `slug.invalid`), 422 for a value out of range (a TTL, a name).
public enum ActivityRequest {
    /// The sounds PushWard's `sound` accepts.
    public static let sounds: Set<String> = ["default", "chime", "alert", "success", "warning", "bell", "ding", "buzz", "notification"]
    /// Most seconds `ended_ttl` and `stale_ttl` may be (30 days).
    public static let maximumTTL = 2_592_000
    /// Most seconds `dismissal_ttl` may be (4 h, the iOS ceiling).
    public static let maximumDismissalTTL = 14_400

    /// The body of `POST /activities`.
    public static func create(json: some Collection<UInt8>) throws(ActivityProblem) -> ActivityCreateRequest {
        let object = try bodyObject(json)
        try refuseUnknownMembers(object, allowed: ["slug", "name", "priority", "ended_ttl", "stale_ttl", "dismissal_ttl"])
        try refuseNullMembers(object, ["slug", "name", "priority"])
        guard let slugValue = object["slug"] else { throw .bodyInvalid("slug is required", location: "body.slug") }
        guard let slug = slugValue.stringValue else { throw .bodyInvalid("slug must be a string", location: "body.slug") }
        try ActivitySlug.validate(slug)
        guard let nameValue = object["name"] else { throw .bodyInvalid("name is required", location: "body.name") }
        guard let name = nameValue.stringValue else { throw .bodyInvalid("name must be a string", location: "body.name") }
        try validateName(name)
        return ActivityCreateRequest(
            slug: slug, name: name, priority: try priority(object["priority"]),
            endedTTL: try ttl(object, "ended_ttl", minimum: 1, maximum: maximumTTL, nullClears: false).applied(to: nil),
            staleTTL: try ttl(object, "stale_ttl", minimum: 1, maximum: maximumTTL, nullClears: false).applied(to: nil),
            dismissalTTL: try ttl(object, "dismissal_ttl", minimum: 0, maximum: maximumDismissalTTL, nullClears: false).applied(to: nil))
    }

    /// The body of `PATCH /activities/{slug}` (`application/merge-patch+json` or `application/json`).
    public static func patch(json: some Collection<UInt8>) throws(ActivityProblem) -> ActivityPatch {
        let object = try bodyObject(json)
        try refuseUnknownMembers(object, allowed: ["state", "content", "priority", "sound", "ended_ttl", "stale_ttl", "dismissal_ttl"])
        // PushWard's schema has no null for these (only the TTLs are "null to clear"): activity-rules.md, "PushWard's schema".
        try refuseNullMembers(object, ["state", "content", "priority", "sound"])
        var patch = ActivityPatch()
        switch object["state"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let state = ActivityTargetState(rawValue: text.lowercased()) else { throw .stateInvalid(text) }
            patch.state = state
        case let other?: throw .stateInvalid(Self.text(of: other))
        }
        switch object["content"] {
        case nil, .null?: break
        case .object(let content)? where content["template"] == .null:
            throw .bodyInvalid("content.template must not be null", location: "body.content.template")
        case .object(let content)?: patch.content = content
        case _?: throw .bodyInvalid("content must be an object", location: "body.content")
        }
        if let value = object["priority"], value != .null { patch.priority = try priority(value) }
        switch object["sound"] {
        case nil, .null?: break
        case .string(let sound)? where sounds.contains(sound): patch.sound = sound
        case let other?:
            throw .fieldInvalid("sound must be one of \(sounds.sorted().joined(separator: ", ")), got \(Self.text(of: other))", location: "body.sound")
        }
        patch.endedTTL = try ttl(object, "ended_ttl", minimum: 1, maximum: maximumTTL)
        patch.staleTTL = try ttl(object, "stale_ttl", minimum: 1, maximum: maximumTTL)
        patch.dismissalTTL = try ttl(object, "dismissal_ttl", minimum: 0, maximum: maximumDismissalTTL)
        return patch
    }

    /// 1–256 characters.
    static func validateName(_ name: String) throws(ActivityProblem) {
        guard name.utf8.count <= 256 * ContentLimits.bytesPerCharacter else {
            throw .fieldInvalid("name must be at most \(256 * ContentLimits.bytesPerCharacter) bytes of UTF-8, got \(name.utf8.count)", location: "body.name")
        }
        guard !name.isEmpty, name.count <= 256 else {
            throw .fieldInvalid("name must be 1 to 256 characters, got \(name.count)", location: "body.name")
        }
    }

    static func bodyObject(_ json: some Collection<UInt8>) throws(ActivityProblem) -> JSONObject {
        guard json.contains(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }) else { throw .bodyRequired }
        let value: JSONValue
        do {
            value = try JSONValue.decode(Data(json))
        } catch {
            throw .bodyInvalid("invalid JSON: \(error)")
        }
        guard case .object(let object) = value else { throw .bodyInvalid("the body must be a JSON object") }
        return object
    }

    static func refuseUnknownMembers(_ object: JSONObject, allowed: Set<String>) throws(ActivityProblem) {
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .bodyInvalid("unknown field \"\(unknown)\"", location: "body.\(unknown)")
        }
    }

    /// Throws 400 `request.body_invalid` for the first of `keys` that is JSON `null`.
    static func refuseNullMembers(_ object: JSONObject, _ keys: [String]) throws(ActivityProblem) {
        if let key = keys.first(where: { object[$0] == .null }) {
            throw .bodyInvalid("\(key) must not be null", location: "body.\(key)")
        }
    }

    /// PATCH's `upsert` query parameter: absent is false; every value given must be `true` or `false` (PushWard's
    /// boolean), else 400 `request.query_invalid`.
    public static func upsert(_ values: [String]) throws(ActivityProblem) -> Bool {
        var upsert = false
        for value in values {
            switch value.lowercased() {
            case "true": upsert = true
            case "false": break
            default:
                throw ActivityProblem(
                    code: .requestQueryInvalid, status: 400, detail: "upsert must be true or false, got \(value)",
                    fieldErrors: [.init(location: "query.upsert", message: "must be true or false", value: .string(value))])
            }
        }
        return upsert
    }

    static func priority(_ value: JSONValue?) throws(ActivityProblem) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .int(let priority)?:
            guard (0...10).contains(priority) else { throw .priorityInvalid }
            return priority
        case _?: throw ActivityProblem(code: .activityPriorityInvalid, status: 400, detail: "priority must be an integer between 0 and 10")
        }
    }

    /// A TTL member: absent keeps, a number in range sets, null clears where `nullClears` (PATCH) and is 400 elsewhere.
    static func ttl(_ object: JSONObject, _ key: String, minimum: Int, maximum: Int, nullClears: Bool = true) throws(ActivityProblem) -> FieldPatch<Int> {
        switch object[key] {
        case nil: return .keep
        case .null? where nullClears: return .clear
        case .int(let seconds)?:
            guard (minimum...maximum).contains(seconds) else {
                throw .fieldInvalid("\(key) must be between \(minimum) and \(maximum) seconds, got \(seconds)", location: "body.\(key)")
            }
            return .set(seconds)
        case _?: throw .bodyInvalid("\(key) must be an integer", location: "body.\(key)")
        }
    }

    static func text(of value: JSONValue) -> String {
        (try? value.encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }
}

/// The slug rule: `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$`.
public enum ActivitySlug {
    /// Whether `slug` is a valid slug.
    public static func isValid(_ slug: String) -> Bool {
        let bytes = Array(slug.utf8)
        guard (1...128).contains(bytes.count), isAlphanumeric(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// Throws 400 `slug.invalid` unless `slug` is valid.
    public static func validate(_ slug: String) throws(ActivityProblem) {
        guard isValid(slug) else { throw .slugInvalid }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
