import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import Hummingbird

extension ErrorShape {
    /// ntfy's error body (its `errors.go`): `{"code": 40001, "http": 400, "error": "…", "link": "…"}`, the code being the
    /// status times 100 plus a number; ntfy's clients (Home Assistant's `aiontfy`) read it.
    static let ntfy = ErrorShape(name: "ntfy") { error in
        var body: JSONObject = [
            "code": .int(NtfyAnswers.code(of: error)), "http": .int(error.status.code), "error": .string(error.message),
        ]
        body["link"] = .string(NtfyAnswers.link(of: error))
        return body
    }
}

/// ntfy's answers: the published message, and the numbers of its errors.
enum NtfyAnswers {
    /// `200` with the message as ntfy's server returns it (`{id, time, expires, event: "message", topic, …}`). The `id`
    /// is Herald's notification id, usable with `GET /api/push/notifications/{id}`.
    static func published(_ message: NtfyMessage, receipt: SendReceipt) -> Response {
        var headers = SendAnswers.headers(receipt.quota, now: receipt.notification.createdAt)
        headers[.init("X-Herald-Status")!] = receipt.statusWord
        return published(message, notification: receipt.notification, headers: headers)
    }

    /// The published message of a send to a topic: ntfy's shape, with the first stored member's notification as its
    /// `id`, `X-Herald-Delivery: all|partial` and no `RateLimit-*` headers (each member has its own limit).
    static func published(_ message: NtfyMessage, fanout: FanoutReceipt) -> Response {
        let first = fanout.members.lazy.compactMap(\.notification).first
        guard let notification = first else { return JSONResponse.make(status: .internalServerError, body: [:]) }  // refused before
        return published(message, notification: notification, headers: [.init("X-Herald-Delivery")!: fanout.delivery.rawValue])
    }

    /// The published message of a delayed send, as ntfy answers one: `time` is when it goes out; the `id` is the
    /// scheduled send's (`X-Herald-Scheduled`), the notification's own id exists once it has gone out.
    static func published(_ message: NtfyMessage, scheduled: ScheduledSend, timeToLive: TimeInterval) -> Response {
        let sendAt = scheduled.sendAt ?? scheduled.createdAt
        return published(
            message, id: scheduled.id, time: sendAt, expires: sendAt.addingTimeInterval(timeToLive),
            headers: [.init("X-Herald-Scheduled")!: scheduled.id.lowercasedText])
    }

    private static func published(_ message: NtfyMessage, notification: PushNotification, headers: HTTPFields) -> Response {
        published(message, id: notification.id, time: notification.createdAt, expires: notification.expiresAt, headers: headers)
    }

    private static func published(_ message: NtfyMessage, id: UUID, time: Date, expires: Date, headers: HTTPFields) -> Response {
        var body: JSONObject = [
            "id": .string(id.lowercasedText),
            "time": .int(Int(time.timeIntervalSince1970)),
            "expires": .int(Int(expires.timeIntervalSince1970)),
            "event": "message", "topic": .string(message.topic), "message": .string(message.message),
        ]
        body["title"] = message.title.map(JSONValue.string)
        if message.priority != 3 { body["priority"] = .int(message.priority) }
        if !message.tags.isEmpty { body["tags"] = .array(message.tags.map(JSONValue.string)) }
        body["click"] = message.click.map(JSONValue.string)
        if !message.actions.isEmpty { body["actions"] = .array(message.actions.map(\.json)) }
        if let attach = message.attach {
            var attachment: JSONObject = ["url": .string(attach)]
            attachment["name"] = .string(message.filename ?? URL(string: attach)?.lastPathComponent ?? "attachment")
            body["attachment"] = .object(attachment)
        }
        body["icon"] = message.icon.map(JSONValue.string)
        if message.markdown { body["content_type"] = "text/markdown" }
        body["sequence_id"] = message.sequenceID.map(JSONValue.string)
        return JSONResponse.make(status: .ok, body: body, headers: headers)
    }

    /// ntfy's code for a refusal: its own numbers where ntfy has one for the same refusal, else the status times 100 + 1.
    static func code(of error: APIError) -> Int {
        if case .int(let code)? = error.extra["ntfy_code"] { return code }  // NtfyDelay's refusals
        // ntfy has no code for a full schedule: 40900 makes its clients raise their plain conflict (aiontfy's
        // NtfyConflictError), where 40901 would say "user already exists".
        if error.extra["code"] == "notification_schedule.limit_exceeded" { return 40_900 }
        return switch (error.code, error.field) {
        case (.invalidField, "priority"?): 40007
        case (.invalidField, "delay"?): 40004
        case (.invalidField, let field?) where field.hasPrefix("actions"): 40018
        case (.invalidField, "body"?): 40014  // ntfy's "attachments not allowed"
        case (.malformedJSON, _): 40024
        case (.unknownUser, _), (.notFound, _): 40401
        case (.rateLimited, _), (.exemptLimitReached, _): 42908
        case (.backlogFull, _): 42908  // ntfy's "too many messages", as the daily limit
        case (.tooManyAuthFailures, _): 42909  // ntfy's "too many failed authentications"
        case (.bodyTooLarge, _): 41301
        default: error.status.code * 100 + 1
        }
    }

    static func link(of error: APIError) -> String {
        switch error.field {
        case "priority"?: "https://ntfy.sh/docs/publish/#message-priority"
        case "delay"?: "https://ntfy.sh/docs/publish/#scheduled-delivery"
        case let field? where field.hasPrefix("actions"): "https://ntfy.sh/docs/publish/#action-buttons"
        case "body"?: "https://ntfy.sh/docs/publish/#attachments"
        default: "https://ntfy.sh/docs/publish/"
        }
    }
}
