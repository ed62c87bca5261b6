import Foundation
import HeraldCore

/// Activities as the API answers them: openapi.yaml's `Activity` (and `ListActivitiesPage`), members that have no
/// value left out rather than `null` (the schema has no nullable member), `kind` always `owned`, `content` defaulting
/// to `{"template":"generic"}`, the log backlog only when asked for. An `approval` card (not in PushWard's document)
/// also has `answer`, `null` until it is answered.
public enum ActivityJSON {
    /// One activity as an object.
    public static func object(_ activity: Activity, includeLogBacklog: Bool = false) -> JSONObject {
        var content = activity.contentForAnswer
        content["log_backlog"] = nil
        if includeLogBacklog, activity.template == .log { content["log_backlog"] = .array(activity.memory.logBacklog) }
        var object: JSONObject = [
            "id": .string(activity.id.lowercasedText),
            "kind": "owned",
            "slug": .string(activity.slug),
            "name": .string(activity.name),
            "state": .string(activity.state.rawValue),
            "priority": .int(activity.priority),
            "content": .object(content),
            "created_at": .string(rfc3339(activity.createdAt)),
            "updated_at": .string(rfc3339(activity.updatedAt)),
        ]
        if let endedTTL = activity.endedTTL { object["ended_ttl"] = .int(endedTTL) }
        if let staleTTL = activity.staleTTL { object["stale_ttl"] = .int(staleTTL) }
        if let dismissalTTL = activity.dismissalTTL { object["dismissal_ttl"] = .int(dismissalTTL) }
        if let endedAt = activity.endedAt { object["ended_at"] = .string(rfc3339(endedAt)) }
        if let deleteAt = activity.deleteAt { object["delete_at"] = .string(rfc3339(deleteAt)) }
        if activity.template == .approval { object["answer"] = answer(activity.memory.approvalAnswer) }
        return object
    }

    /// An approval card's `answer`: `{"option", "by": "user"|"expired", "answered_at"}`, `null` until it is answered.
    public static func answer(_ answer: ApprovalAnswer?) -> JSONValue {
        guard let answer else { return .null }
        return ["option": .string(answer.option), "by": .string(answer.by.rawValue), "answered_at": .string(rfc3339(answer.answeredAt))]
    }

    /// One activity as the body of an answer.
    public static func body(_ activity: Activity, includeLogBacklog: Bool = false) throws -> [UInt8] {
        try bytes(.object(object(activity, includeLogBacklog: includeLogBacklog)))
    }

    /// A page of `GET /activities`: `items` (sorted by slug, as given) and `next_cursor` when there are more.
    /// - Parameter hasMore: whether activities follow the last of `items`; the cursor then names that last slug.
    public static func page(_ items: [Activity], hasMore: Bool) throws -> [UInt8] {
        var page: JSONObject = ["items": .array(items.map { .object(object($0)) })]
        if hasMore, let last = items.last { page["next_cursor"] = .string(ActivityCursor.make(after: last.slug)) }
        return try bytes(.object(page))
    }

    /// `2025-06-15T10:30:00Z`: RFC 3339 in UTC, whole seconds (as PushWard writes them).
    public static func rfc3339(_ date: Date) -> String {
        let iso = date.iso8601WithMilliseconds  // yyyy-MM-ddTHH:mm:ss.SSSZ
        return String(iso.prefix(19)) + "Z"
    }

    /// The JSON text of `value`; throws rather than answer an empty body (a number that is not finite).
    static func bytes(_ value: JSONValue) throws -> [UInt8] {
        Array(try value.encoded())
    }
}

/// The opaque cursor of `GET /activities`: base64url of the last slug of the page.
public enum ActivityCursor {
    /// The cursor that continues after `slug`.
    public static func make(after slug: String) -> String {
        Base64URL.encode(Array(slug.utf8))
    }

    /// The slug a cursor continues after; 400 `cursor.invalid` for anything Herald did not issue.
    public static func slug(from cursor: String) throws(ActivityProblem) -> String {
        guard let bytes = Base64URL.decode(cursor), let slug = String(bytes: bytes, encoding: .utf8), ActivitySlug.isValid(slug) else {
            throw .cursorInvalid
        }
        return slug
    }
}

/// The query of `GET /activities`: `limit` (1–100, default 50), `after` (a cursor), `state` (case-insensitive).
public struct ActivityListQuery: Sendable, Equatable {
    public var limit: Int
    /// The slug the page starts after (decoded from `after`).
    public var afterSlug: String?
    public var state: ActivityState?

    public init(limit: Int = 50, afterSlug: String? = nil, state: ActivityState? = nil) {
        self.limit = limit
        self.afterSlug = afterSlug
        self.state = state
    }

    /// Parses the query's raw values; 422 for a `limit` out of range, 400 for a bad cursor or state.
    public static func parse(limit: String?, after: String?, state: String?) throws(ActivityProblem) -> ActivityListQuery {
        var query = ActivityListQuery()
        if let limit {  // an empty limit= is not PushWard's integer: 422 too
            guard let value = Int(limit), (1...100).contains(value) else {
                throw ActivityProblem(
                    code: .requestQueryInvalid, status: 422, detail: "limit must be an integer between 1 and 100, got \(limit)",
                    fieldErrors: [.init(location: "query.limit", message: "must be between 1 and 100", value: .string(limit))])
            }
            query.limit = value
        }
        if let after, !after.isEmpty { query.afterSlug = try ActivityCursor.slug(from: after) }
        if let state {
            guard let value = ActivityState(rawValue: state.lowercased()) else { throw .stateInvalid(state, allowed: "ongoing, ended, preempted") }
            query.state = value
        }
        return query
    }

    /// Whether `?include=` (comma-separated) asks for the log backlog.
    public static func includesLogBacklog(_ include: String?) -> Bool {
        include?.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "log_backlog" } ?? false
    }
}

/// `?wait=N` of `GET /activities/{slug}`: how long to hold the read of an unanswered approval card (the answers' rule:
/// absent or empty for 0, whole seconds, more than ``maximum`` waits that long).
public enum ActivityWait {
    /// The longest hold, in seconds; a client that wants to wait longer reads again.
    public static let maximum = 25

    /// The seconds to hold; 400 `request.query_invalid` at `query.wait` for anything but a whole number of 0 or more.
    public static func seconds(_ given: String?) throws(ActivityProblem) -> Int {
        guard let given, !given.isEmpty else { return 0 }
        let digits = given.utf8.allSatisfy { (48...57).contains($0) }
        guard digits else {
            throw ActivityProblem(
                code: .requestQueryInvalid, status: 400, detail: "wait must be a whole number of seconds, 0 or more (at most \(maximum) are waited)",
                fieldErrors: [.init(location: "query.wait", message: "must be a whole number of seconds", value: .string(given))])
        }
        // All digits but past Int: as long as any larger number.
        return min(Int(given) ?? maximum, maximum)
    }
}
