import Foundation
import HeraldCore
import PostgresNIO

/// Answers, the app's events and the inbox on PostgreSQL (``AfterPushStore``; migration 12).
extension PostgresStore {
    public func recordAnswer(_ answer: NotificationAnswer) async throws -> AnswerRecording {
        let inserted = try await write(
            """
            INSERT INTO notification_answer (notification_id, notification_created_at, action_id, answer_text, answered_at)
            SELECT id, created_at, \(answer.actionID), \(answer.text), \(answer.answeredAt.timeIntervalSince1970)
            FROM notification WHERE id = \(answer.notificationID)
            ON CONFLICT (notification_id, notification_created_at) DO NOTHING RETURNING 1
            """)
        if !inserted.isEmpty { return .recorded }
        guard let first = try await answers(of: [answer.notificationID])[answer.notificationID] else {
            throw StoreError.notFound("answer")
        }
        return .alreadyAnswered(first)
    }

    public func answers(of ids: [PushNotification.ID]) async throws -> [PushNotification.ID: NotificationAnswer] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await read(
            """
            SELECT notification_id AS answer_of, action_id, answer_text, answered_at FROM notification_answer
            WHERE notification_id = ANY(\(ids))
            """)
        var answers: [PushNotification.ID: NotificationAnswer] = [:]
        for row in rows { if let answer = try Self.answer(row.makeRandomAccess()) { answers[answer.notificationID] = answer } }
        return answers
    }

    public func recordEvent(_ event: NotificationEvent, of id: PushNotification.ID) async throws {
        // The notification's row gives the event its day (PostgresPartitions.swift); none: the notification is not there.
        let rows = try await write(
            """
            WITH target AS (SELECT id, created_at FROM notification WHERE id = \(id)),
            inserted AS (
                INSERT INTO notification_event (notification_id, notification_created_at, event, reported_at)
                SELECT id, created_at, \(event.event.rawValue), \(event.at.timeIntervalSince1970) FROM target
                ON CONFLICT DO NOTHING)
            SELECT 1 FROM target
            """)
        guard !rows.isEmpty else { throw StoreError.notFound("notification") }
    }

    public func events(of id: PushNotification.ID) async throws -> [NotificationEvent] {
        try await read(
            "SELECT event, reported_at FROM notification_event WHERE notification_id = \(id) ORDER BY reported_at, event"
        ).map { row in
            let row = row.makeRandomAccess()
            return NotificationEvent(event: try row.enumValue("event"), at: try row.date("reported_at"))
        }
    }

    /// In `inbox_seq` order (a `bigserial` every accepted notification takes; docs/api.md, "The inbox").
    public func inbox(deviceID: Device.ID, after: Int64?, limit: Int) async throws -> [InboxEntry] {
        let columns = Self.notificationColumns.split(separator: ",").map { "n." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let rows = try await read(
            """
            SELECT \(unescaped: columns.joined(separator: ", ")), n.inbox_seq, a.notification_id AS answer_of, a.action_id, a.answer_text,
                a.answered_at, EXISTS (SELECT 1 FROM notification_event e WHERE e.notification_id = n.id AND e.event = 'read') AS is_read
            FROM notification n LEFT JOIN notification_answer a ON a.notification_id = n.id
            WHERE n.device_id = \(deviceID) AND n.push_type = 'alert' AND n.inbox_seq > \(after ?? 0)
            ORDER BY n.inbox_seq LIMIT \(limit)
            """)
        return try rows.map { row in
            let random = row.makeRandomAccess()
            return InboxEntry(
                cursor: try random.value("inbox_seq"), notification: try Self.notification(row), answer: try Self.answer(random),
                isRead: try random.value("is_read"))
        }
    }

    /// The answer in a row with `answer_of`, `action_id`, `answer_text` and `answered_at`; `nil` when `answer_of` is NULL.
    private static func answer(_ row: PostgresRandomAccessRow) throws -> NotificationAnswer? {
        guard let id = try row.value("answer_of", as: UUID?.self) else { return nil }
        return NotificationAnswer(
            notificationID: id, actionID: try row.value("action_id"), text: try row.value("answer_text"),
            answeredAt: try row.date("answered_at"))
    }
}
