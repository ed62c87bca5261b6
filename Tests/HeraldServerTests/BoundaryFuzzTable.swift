import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import Testing

/// A value the boundary test puts into a member: its JSON text (for a body) and its plain text (for a query).
struct BoundaryValue: Sendable, CustomStringConvertible {
    var description: String
    var json: String
    var text: String

    /// A number, written as it is in both places.
    static func number(_ name: String, _ text: String) -> BoundaryValue { BoundaryValue(description: name, json: text, text: text) }

    /// A string: quoted (and escaped) in a body, as it is in a query.
    static func string(_ name: String, _ text: String) -> BoundaryValue {
        BoundaryValue(description: name, json: String(decoding: (try? JSONValue.string(text).encoded()) ?? Data(), as: UTF8.self), text: text)
    }

    /// The values every member gets: the edges of a 64-bit integer, numbers no integer holds, what JavaScript spells
    /// for non-finite numbers, negative zero, a number no double holds, strings that are one huge grapheme or nothing.
    static let all: [BoundaryValue] = [
        .number("Int.max", "9223372036854775807"),
        .number("Int.min", "-9223372036854775808"),
        .number("Int.max + 1", "9223372036854775808"),
        .number("1e300", "1e300"),
        .number("-1e300", "-1e300"),
        .number("9.3e18", "9.3e18"),
        .number("-0", "-0"),
        .number("-0.0", "-0.0"),
        .number("10,000 digits", String(repeating: "9", count: 10_000)),
        .string("\"NaN\"", "NaN"),
        .string("\"Infinity\"", "Infinity"),
        .string("\"-Infinity\"", "-Infinity"),
        .string("\"1e300\"", "1e300"),
        .string("\"9223372036854775808\"", "9223372036854775808"),
        .string("2,000 combining marks", "a" + String(repeating: "\u{301}", count: 2_000)),
        .string("\"\"", ""),
    ]

    /// ``all`` with a combining sequence that fits a push, for the Home Assistant relay, which answers a notification
    /// too large for the push service with the official relay's 500 (`PayloadTooLarge`, docs/homeassistant.md).
    static let relayShaped: [BoundaryValue] = all.map { value in
        value.text.unicodeScalars.count > 1_000 && value.json.hasPrefix("\"")
            ? .string("300 combining marks", "a" + String(repeating: "\u{301}", count: 299)) : value
    }
}

/// Where a fuzzed request goes and what it starts from: a dialect's valid request, and the members the boundary test
/// fills one at a time with every ``BoundaryValue``. To cover a new member, add its path to `members`; a new dialect
/// is a new row in ``all``.
struct BoundaryDialect: Sendable, CustomTestStringConvertible {
    /// What a dialect's requests need: the credentials of a device registered for it.
    struct Credentials: Sendable {
        var userID: String
        var basic: HTTPFields
        var bearer: HTTPFields
        var now: Int
    }

    enum Backend: Sendable { case apns, fcm }

    var name: String
    var backend: Backend = .apns
    /// The device the requests are for: registered with this body (`platform`, `token`, …).
    var registration: String = #"{"token": "\#(Fixtures.apnsToken(7))", "live_activity_push_to_start_token": "\#(Fixtures.apnsToken(107))"}"#
    var method: HTTPRequest.Method = .post
    var path: String
    /// The credentials the request carries.
    var headers: @Sendable (Credentials) -> HTTPFields = { _ in [:] }
    /// Requests sent once before the cases (e.g. the activity a PATCH changes): method, path, body.
    var setUp: @Sendable (Credentials) -> [(HTTPRequest.Method, String, String)] = { _ in [] }
    /// The valid body every case starts from; `nil` for a request whose members are query parameters.
    var body: (@Sendable (Credentials) -> JSONObject)?
    /// Dotted paths into `body` (a number is an index into an array), or query parameter names.
    var members: [String]
    /// The values each member gets.
    var values: [BoundaryValue] = BoundaryValue.all

    var testDescription: String { name }
}

extension BoundaryDialect {
    static let activityToken = String(repeating: "ab12", count: 16)

    static func homeAssistant(_ userID: String, _ data: JSONObject, liveActivity: Bool = false) -> JSONObject {
        var body: JSONObject = [
            "message": "Hello", "title": "Front door", "push_token": .string(userID),
            "registration_info": ["app_id": "io.robbie.HomeAssistant", "os_version": "18.1", "webhook_id": "hook"], "data": .object(data),
        ]
        if liveActivity { body["live_activity_token"] = .string(activityToken) }
        return body
    }

    /// Every row: the send dialects, registration and the queries, then PushWard's activities.
    static var all: [BoundaryDialect] { sends + activities }

    static let sends: [BoundaryDialect] = [
        BoundaryDialect(
            name: "camera API", path: "/api/push/notify",
            body: { credentials in
                [
                    "user_id": .string(credentials.userID), "title": "Motion", "body": "Garden", "notification_id": "n1",
                    "open": ["type": "live", "camera_id": "garden"], "snapshot": ["type": "url", "url": "https://cam.example/1.jpg"],
                ]
            },
            members: ["user_id", "title", "body", "notification_id", "open.type", "open.camera_id", "snapshot.type", "snapshot.url"]),
        BoundaryDialect(
            name: "Home Assistant relay", path: "/api/push/homeassistant",
            body: { credentials in
                homeAssistant(
                    credentials.userID,
                    [
                        "push": ["badge": 3, "category": "alarm", "sound": ["name": "alarm.caf", "critical": 1, "volume": 0]],
                        "subtitle": "Porch", "tag": "door", "group": "doors", "url": "/lovelace/0", "entity_id": "lock.front",
                        "action_data": ["entity_id": "lock.front"], "actions": [["action": "OPEN", "title": "Open"]],
                        "attachment": ["url": "https://ha.example/a.jpg"], "level": 1,
                        "apns_headers": ["apns-expiration": "0", "apns-priority": "10", "apns-collapse-id": "door"],
                    ])
            },
            members: [
                "message", "title", "push_token", "data.push.badge", "data.push.sound.critical", "data.push.sound.volume",
                "data.push.sound.name", "data.push.category", "data.subtitle", "data.tag", "data.group", "data.url", "data.level",
                "data.action_data.entity_id", "data.actions.0.title", "data.attachment.url", "data.apns_headers.apns-expiration",
                "data.apns_headers.apns-priority", "data.apns_headers.apns-collapse-id",
            ], values: BoundaryValue.relayShaped),
        BoundaryDialect(
            name: "Home Assistant Live Activity", path: "/api/push/homeassistant",
            body: { credentials in
                homeAssistant(
                    credentials.userID,
                    [
                        "event": "update", "when": 90, "when_relative": true, "progress": 3, "progress_max": 10, "stale_date": .int(credentials.now + 60),
                        "relevance_score": 1, "chronometer": true, "content_state": ["progress": 4],
                    ], liveActivity: true)
            },
            members: [
                "data.when", "data.when_relative", "data.progress", "data.progress_max", "data.stale_date", "data.relevance_score",
                "data.event", "data.chronometer", "data.content_state.progress",
            ], values: BoundaryValue.relayShaped),
        BoundaryDialect(
            name: "Home Assistant relay, Android", backend: .fcm, registration: #"{"platform": "fcm", "token": "\#(Fixtures.fcmToken(7))"}"#,
            path: "/api/push/homeassistant",
            body: { credentials in
                homeAssistant(
                    credentials.userID,
                    [
                        "ttl": 60_000, "priority": "high", "when": .int(credentials.now), "progress": 2, "channel": "alarms",
                        "actions": [["action": "OPEN", "title": "Open"]], "data": ["key": "value"],
                    ])
            },
            members: ["data.ttl", "data.priority", "data.when", "data.progress", "data.channel", "data.actions.0.title", "data.data.key"], values: BoundaryValue.relayShaped),
        BoundaryDialect(
            name: "POST /notifications", path: "/notifications", headers: { $0.bearer },
            body: { _ in
                [
                    "title": "Build", "body": "Done", "source": "ci", "source_display_name": "CI", "level": "time-sensitive",
                    "image_url": "https://ci.example/i.png", "url": "https://ci.example/1", "notification_id": "b1",
                    "actions": [["id": "open", "title": "Open", "url": "https://ci.example/1", "method": "POST", "body": "{}", "headers": ["X-A": "1"]]],
                ]
            },
            members: [
                "title", "body", "source", "source_display_name", "level", "image_url", "url", "notification_id", "actions.0.id",
                "actions.0.title", "actions.0.url", "actions.0.method", "actions.0.body", "actions.0.headers.X-A", "actions.0.foreground",
            ]),
        // Repeats until acknowledged (issue 39, section 3): one collapse id, so an accepted send replaces the last one.
        BoundaryDialect(
            name: "POST /notifications with acknowledge", path: "/notifications", headers: { $0.bearer },
            body: { _ in
                ["title": "Leak", "body": "Basement", "collapse_id": "ack", "acknowledge": ["repeat_seconds": 30, "expire_seconds": 600]]
            },
            members: ["acknowledge.repeat_seconds", "acknowledge.expire_seconds"]),
        BoundaryDialect(
            name: "registration", path: "/api/push/register",
            body: { _ in
                ["token": .string(Fixtures.apnsToken(8)), "environment": "production", "platform": "apns",
                 "live_activity_push_to_start_token": .string(Fixtures.apnsToken(108))]
            },
            members: ["token", "environment", "platform", "live_activity_push_to_start_token", "user_id", "device_secret"]),
        BoundaryDialect(
            name: "Web Push registration", path: "/api/push/register",
            body: { _ in
                let keys = WebPushDecryption.Subscriber()
                return [
                    "platform": "webpush",
                    "subscription": [
                        "endpoint": "https://fcm.googleapis.com/fcm/send/boundary", "expirationTime": .null,
                        "keys": ["p256dh": .string(keys.p256dh), "auth": .string(keys.authText)],
                    ],
                ]
            },
            members: ["subscription.endpoint", "subscription.expirationTime", "subscription.keys.p256dh", "subscription.keys.auth"]),
        BoundaryDialect(
            name: "query parameters, owner", method: .get, path: "/api/push/notifications", headers: { $0.basic }, members: ["limit"]),
    ]

    /// PushWard's activity paths (their rules: HeraldActivities).
    static let activities: [BoundaryDialect] = [
        BoundaryDialect(
            name: "PushWard activity create", path: "/activities", headers: { $0.bearer },
            body: { _ in ["slug": "created", "name": "Oven", "priority": 1, "ended_ttl": 60, "stale_ttl": 60, "dismissal_ttl": 0] },
            members: ["slug", "name", "priority", "ended_ttl", "stale_ttl", "dismissal_ttl"]),
        BoundaryDialect(
            name: "PushWard activity PATCH (countdown)", method: .patch, path: "/activities/countdown?upsert=true", headers: { $0.bearer },
            body: { credentials in
                [
                    "state": "ongoing", "priority": 1, "ended_ttl": 60, "stale_ttl": 60, "dismissal_ttl": 0,
                    "content": [
                        "template": "countdown", "state": "Baking", "start_date": .int(credentials.now), "end_date": .int(credentials.now + 600),
                        "warning_threshold": 60, "snooze_seconds": 300, "progress": 0.5, "remaining_time": 600,
                    ],
                ]
            },
            members: [
                "state", "priority", "ended_ttl", "stale_ttl", "dismissal_ttl", "content.state", "content.start_date",
                "content.end_date", "content.warning_threshold", "content.snooze_seconds", "content.progress", "content.remaining_time",
                "content.duration",
            ]),
        BoundaryDialect(
            name: "PushWard activity PATCH (gauge)", method: .patch, path: "/activities/gauge?upsert=true", headers: { $0.bearer },
            body: { _ in ["state": "ongoing", "content": ["template": "gauge", "value": 5, "min_value": 0, "max_value": 10]] },
            members: ["content.value", "content.min_value", "content.max_value"]),
        BoundaryDialect(
            name: "PushWard activity PATCH (countdown by duration)", method: .patch, path: "/activities/duration?upsert=true",
            headers: { $0.bearer },
            body: { _ in ["state": "ongoing", "content": ["template": "countdown", "duration": 600]] }, members: ["content.duration"]),
        BoundaryDialect(
            name: "PushWard activity PATCH (gauge at a double's edges)", method: .patch, path: "/activities/edges?upsert=true",
            headers: { $0.bearer },
            body: { _ in ["state": "ongoing", "content": ["template": "gauge", "value": 0, "min_value": -1.7e308, "max_value": 1.7e308]] },
            members: ["content.value"]),
        BoundaryDialect(
            name: "PushWard activity snooze", path: "/activities/snoozed/snooze", headers: { $0.bearer },
            setUp: { credentials in
                [(.patch, "/activities/snoozed?upsert=true",
                  #"{"state": "ongoing", "content": {"template": "countdown", "end_date": \#(credentials.now + 600)}}"#)]
            },
            body: { _ in ["seconds": 120] }, members: ["seconds"]),
        BoundaryDialect(
            name: "PushWard activity list", method: .get, path: "/activities", headers: { $0.bearer }, members: ["limit", "after", "state"]),
    ]
}

extension JSONObject {
    /// This object with the member at `path` (dotted; a number indexes an array) set to `value`, creating objects on
    /// the way where members are missing.
    func setting(_ path: ArraySlice<Substring>, to value: JSONValue) -> JSONObject {
        guard let key = path.first.map(String.init) else { return self }
        var copy = self
        copy[key] = path.count == 1 ? value : (self[key] ?? .object([:])).setting(path.dropFirst(), to: value)
        return copy
    }
}

extension JSONValue {
    fileprivate func setting(_ path: ArraySlice<Substring>, to value: JSONValue) -> JSONValue {
        switch self {
        case .array(var elements):
            guard let index = path.first.flatMap({ Int($0) }), elements.indices.contains(index) else { return self }
            elements[index] = path.count == 1 ? value : elements[index].setting(path.dropFirst(), to: value)
            return .array(elements)
        case .object(let object):
            return .object(object.setting(path, to: value))
        default:
            return .object(JSONObject().setting(path, to: value))
        }
    }
}
