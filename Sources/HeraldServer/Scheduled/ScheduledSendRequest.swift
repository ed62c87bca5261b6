import Foundation
import HTTPTypes
import HeraldCore

/// `POST /notifications/scheduled`: `{"notification": <a POST /notifications body>, "send_at"}` or `{…, "recurrence":
/// {"cron", "timezone", "until"?, "count"?}}`. The notification is parsed by `POST /notifications`' own request type
/// (``ActionNotificationRequest``) now, so that a send that cannot go out is refused now, and again when it goes out.
struct ScheduledSendRequest {
    /// The furthest ahead a send may be scheduled (`send_at`, a recurrence's first send).
    static let horizon: TimeInterval = 365 * 86_400
    /// Sends of one recurrence at least this far apart (minutes).
    static let shortestInterval = 15
    /// Sends one device may have scheduled at once.
    static let maximumPendingPerDevice = 25
    static let maximumCount = 100_000

    /// Stores `send` unless its device already has ``maximumPendingPerDevice`` scheduled: then 409
    /// `notification_schedule.limit_exceeded` (`POST /notifications/scheduled` and ntfy's `delay` alike).
    static func insert(_ send: ScheduledSend, into store: any ScheduledSendStore) async throws {
        let stored = try await storeCall { try await store.insertScheduledSend(send, maximumPending: maximumPendingPerDevice) }
        guard stored else {
            throw APIError.problem(
                "notification_schedule.limit_exceeded", status: .conflict,
                detail: "This device already has \(maximumPendingPerDevice) scheduled sends; cancel one or wait until one has gone out.")
        }
    }

    var notification: JSONObject
    var parsed: ActionNotificationRequest
    var sendAt: Date?
    var recurrence: ScheduledSend.Recurrence?
    /// When it goes out first.
    var firstAt: Date

    init(_ json: JSONObject, now: Date) throws {
        if let unknown = json.keys.sorted().first(where: { !["notification", "send_at", "recurrence"].contains($0) }) {
            throw APIError.invalidField(unknown, "\(unknown) is not a member of a scheduled send (notification, send_at, recurrence).")
        }
        guard let notification = json["notification"]?.objectValue else {
            throw APIError.invalidField("notification", "notification must be an object: the body of POST /notifications.")
        }
        self.notification = notification
        parsed = try ActionNotificationRequest(notification)
        if parsed.acknowledge != nil {
            // Repeats until acknowledged start from POST /notifications only (docs/api.md, "Receipts").
            throw APIError.invalidField("notification.acknowledge", "notification.acknowledge is not taken by a scheduled send.")
        }
        if parsed.callbackURL != nil {
            // callback_url reports a receipt's end, and a scheduled send has no receipt; the token's outcome callbacks
            // (PUT /notifications/callback) report what happened to a scheduled notification.
            throw APIError.invalidField(
                "notification.callback_url",
                "notification.callback_url goes with acknowledge, which a scheduled send does not take; the token's outcome callbacks report scheduled notifications.")
        }
        switch (json["send_at"], json["recurrence"]) {
        case (let sendAt?, nil) where sendAt != .null:
            let date = try Self.time(sendAt, field: "send_at")
            guard date > now else { throw APIError.invalidField("send_at", "send_at must be in the future.") }
            guard date.timeIntervalSince(now) <= Self.horizon else {
                throw APIError.invalidField("send_at", "send_at must be at most 365 days ahead.")
            }
            self.sendAt = date
            firstAt = date
        case (nil, nil), (.null?, nil), (.null?, .null?), (nil, .null?):
            throw APIError.invalidField("send_at", "A scheduled send needs send_at (RFC 3339) or recurrence.")
        case (nil, let recurrence?), (.null?, let recurrence?):
            let (parsed, first) = try Self.recurrence(recurrence, now: now)
            self.recurrence = parsed
            firstAt = first
        default:
            throw APIError.invalidField("recurrence", "Give send_at or recurrence, not both.")
        }
    }

    private static func recurrence(_ value: JSONValue, now: Date) throws -> (ScheduledSend.Recurrence, Date) {
        guard let object = value.objectValue else { throw APIError.invalidField("recurrence", "recurrence must be an object {cron, timezone, until?, count?}.") }
        if let unknown = object.keys.sorted().first(where: { !["cron", "timezone", "until", "count"].contains($0) }) {
            throw APIError.invalidField("recurrence.\(unknown)", "recurrence.\(unknown) is not a member of recurrence (cron, timezone, until, count).")
        }
        guard let cron = object["cron"]?.stringValue else {
            throw APIError.invalidField("recurrence.cron", "recurrence.cron must be a five-field cron expression, e.g. \"0 7 * * 1-5\".")
        }
        let expression: CronExpression
        do {
            expression = try CronExpression(cron)
        } catch {
            throw APIError.invalidField("recurrence.cron", "recurrence.cron: \(error)")
        }
        guard expression.shortestInterval >= Self.shortestInterval else {
            throw APIError.invalidField(
                "recurrence.cron", "recurrence.cron fires \(expression.shortestInterval) minutes apart; sends must be at least 15 minutes apart.")
        }
        guard let zoneName = object["timezone"]?.stringValue, zoneName.count <= 64, let zone = TimeZone(identifier: zoneName) else {
            throw APIError.invalidField("recurrence.timezone", "recurrence.timezone must be an IANA time zone, e.g. \"Europe/Berlin\".")
        }
        var until: Date?
        if let value = object["until"], value != .null {
            let date = try time(value, field: "recurrence.until")
            guard date > now else { throw APIError.invalidField("recurrence.until", "recurrence.until must be in the future.") }
            until = date
        }
        var count: Int?
        if let value = object["count"], value != .null {
            guard case .int(let number) = value, (1...maximumCount).contains(number) else {
                throw APIError.invalidField("recurrence.count", "recurrence.count must be a whole number from 1 to \(maximumCount).")
            }
            count = number
        }
        let schedule = CronSchedule(expression: expression, timeZone: zone)
        guard let first = schedule.nextFire(after: now), first.timeIntervalSince(now) <= horizon, first <= (until ?? first) else {
            throw APIError.invalidField("recurrence.cron", "recurrence.cron does not fire within 365 days (before until).")
        }
        return (ScheduledSend.Recurrence(cron: cron, timeZone: zone.identifier, until: until, count: count), first)
    }

    /// An RFC 3339 time (with or without fractions of a second, with its offset).
    static func time(_ value: JSONValue, field: String) throws -> Date {
        guard let text = value.stringValue, text.count <= 40 else {
            throw APIError.invalidField(field, "\(field) must be an RFC 3339 time, e.g. \"2026-06-01T07:00:00Z\".")
        }
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = plain.date(from: text) ?? fractional.date(from: text) else {
            throw APIError.invalidField(field, "\(field) must be an RFC 3339 time, e.g. \"2026-06-01T07:00:00Z\".")
        }
        return date
    }
}

extension ScheduledSend {
    /// The next send of a recurrence after `date`, or `nil` when it has ended (past `until`, `count` sends reached, or no
    /// fire within the horizon).
    func nextFire(after date: Date) -> Date? {
        guard let recurrence, let zone = TimeZone(identifier: recurrence.timeZone), let expression = try? CronExpression(recurrence.cron) else {
            return nil
        }
        if let count = recurrence.count, sentCount >= count { return nil }
        guard let next = CronSchedule(expression: expression, timeZone: zone).nextFire(after: date) else { return nil }
        if let until = recurrence.until, next > until { return nil }
        return next
    }

    /// The JSON of the API (`GET /notifications/scheduled/{id}`).
    var json: JSONObject {
        var body: JSONObject = [
            "id": .string(id.lowercasedText), "status": .string(status.rawValue), "sent_count": .int(sentCount),
            "created_at": .string(createdAt.iso8601WithMilliseconds),
            "next_send_at": nextAt.map { .string($0.iso8601WithMilliseconds) } ?? .null,
            "last_error": lastError.map(JSONValue.string) ?? .null,
            "notification_id": lastNotificationID.map { .string($0.lowercasedText) } ?? .null,
            "canceled_at": canceledAt.map { .string($0.iso8601WithMilliseconds) } ?? .null,
            "notification": (try? JSONValue.decode(notification)) ?? .null,
        ]
        if let sendAt { body["send_at"] = .string(sendAt.iso8601WithMilliseconds) }
        if let recurrence {
            body["recurrence"] = .object([
                "cron": .string(recurrence.cron), "timezone": .string(recurrence.timeZone),
                "until": recurrence.until.map { .string($0.iso8601WithMilliseconds) } ?? .null,
                "count": recurrence.count.map(JSONValue.int) ?? .null,
            ])
        }
        return body
    }
}
