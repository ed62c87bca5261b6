import Foundation
import GRDB
import HeraldCore

/// Answers, the app's events and the inbox on SQLite (``AfterPushStore``; migration v15).
extension SQLiteStore {
    public func recordAnswer(_ answer: NotificationAnswer) async throws -> AnswerRecording {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO notification_answer (notification_id, action_id, answer_text, answered_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (notification_id) DO NOTHING
                    """,
                arguments: [answer.notificationID.databaseString, answer.actionID, answer.text, answer.answeredAt.timeIntervalSince1970])
            if db.changesCount == 1 { return .recorded }
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM notification_answer WHERE notification_id = ?", arguments: [answer.notificationID.databaseString])
            guard let row, let first = try Self.answer(row) else { throw StoreError.notFound("answer") }
            return .alreadyAnswered(first)
        }
    }

    public func answers(of ids: [PushNotification.ID]) async throws -> [PushNotification.ID: NotificationAnswer] {
        guard !ids.isEmpty else { return [:] }
        return try await read { db in
            let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM notification_answer WHERE notification_id IN (\(marks))",
                arguments: StatementArguments(ids.map(\.databaseString)))
            var answers: [PushNotification.ID: NotificationAnswer] = [:]
            for row in rows { if let answer = try Self.answer(row) { answers[answer.notificationID] = answer } }
            return answers
        }
    }

    public func recordEvent(_ event: NotificationEvent, of id: PushNotification.ID) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO notification_event (notification_id, event, reported_at) VALUES (?, ?, ?)",
                arguments: [id.databaseString, event.event.rawValue, event.at.timeIntervalSince1970])
        }
    }

    public func events(of id: PushNotification.ID) async throws -> [NotificationEvent] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT event, reported_at FROM notification_event WHERE notification_id = ? ORDER BY reported_at, event",
                arguments: [id.databaseString]
            ).map { row in
                NotificationEvent(event: try Self.enumValue(row["event"]), at: Date(timeIntervalSince1970: row["reported_at"]))
            }
        }
    }

    /// In `rowid` order: SQLite gives each new row the largest `rowid` plus one (docs/api.md, "The inbox").
    public func inbox(deviceID: Device.ID, after: Int64?, limit: Int) async throws -> [InboxEntry] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT n.rowid AS inbox_cursor, n.*, a.notification_id AS answer_of, a.action_id, a.answer_text, a.answered_at,
                        EXISTS (SELECT 1 FROM notification_event e WHERE e.notification_id = n.id AND e.event = 'read') AS is_read
                    FROM notification n LEFT JOIN notification_answer a ON a.notification_id = n.id
                    WHERE n.device_id = ? AND n.push_type = 'alert' AND n.rowid > ?
                    ORDER BY n.rowid LIMIT ?
                    """,
                arguments: [deviceID.databaseString, after ?? 0, limit]
            ).map { row in
                InboxEntry(
                    cursor: row["inbox_cursor"], notification: try Self.notification(row), answer: try Self.answer(row), isRead: row["is_read"])
            }
        }
    }

    /// The answer in a row with `action_id`, `answer_text`, `answered_at` and the notification's id (`notification_id`
    /// or, in the inbox's join, `answer_of`); `nil` when the row has none.
    private static func answer(_ row: Row) throws -> NotificationAnswer? {
        guard let id: String = row["answer_of"] ?? row["notification_id"], let actionID: String = row["action_id"] else { return nil }
        return NotificationAnswer(
            notificationID: try uuid(id), actionID: actionID, text: row["answer_text"],
            answeredAt: Date(timeIntervalSince1970: row["answered_at"]))
    }
}
