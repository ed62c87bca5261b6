import Foundation
import GRDB
import HeraldCore

/// Scheduled sends (issue 39, section 5) in the SQLite file: one row each, claimed when due with a lease.
extension SQLiteStore {
    /// The table of migration v17.
    static let scheduledSendSchema = """
        CREATE TABLE scheduled_send (
            id TEXT PRIMARY KEY NOT NULL,
            device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            token_id TEXT NOT NULL,
            notification BLOB NOT NULL,
            send_at REAL,
            cron TEXT,
            time_zone TEXT,
            until_at REAL,
            max_count INTEGER,
            next_at REAL,
            status TEXT NOT NULL,
            sent_count INTEGER NOT NULL,
            last_error TEXT,
            last_notification_id TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            canceled_at REAL,
            lease_owner TEXT,
            lease_expires_at REAL
        );
        CREATE INDEX scheduled_send_due ON scheduled_send(next_at) WHERE status = 'scheduled';
        CREATE INDEX scheduled_send_token ON scheduled_send(token_id, created_at);
        CREATE INDEX scheduled_send_device_scheduled ON scheduled_send(device_id) WHERE status = 'scheduled';
        """

    private static let columns = """
        id, device_id, token_id, notification, send_at, cron, time_zone, until_at, max_count, next_at, status, sent_count,
        last_error, last_notification_id, created_at, updated_at, canceled_at
        """

    private static func arguments(_ send: ScheduledSend) -> StatementArguments {
        [
            send.id.databaseString, send.deviceID.databaseString, send.tokenID.databaseString, send.notification,
            send.sendAt?.timeIntervalSince1970, send.recurrence?.cron, send.recurrence?.timeZone,
            send.recurrence?.until?.timeIntervalSince1970, send.recurrence?.count, send.nextAt?.timeIntervalSince1970,
            send.status.rawValue, send.sentCount, send.lastError, send.lastNotificationID?.databaseString,
            send.createdAt.timeIntervalSince1970, send.updatedAt.timeIntervalSince1970, send.canceledAt?.timeIntervalSince1970,
        ]
    }

    private static func scheduledSend(_ row: Row) throws -> ScheduledSend {
        func date(_ column: String) -> Date? { (row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        var recurrence: ScheduledSend.Recurrence?
        if let cron: String = row["cron"], let zone: String = row["time_zone"] {
            recurrence = .init(cron: cron, timeZone: zone, until: date("until_at"), count: row["max_count"])
        }
        return ScheduledSend(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), tokenID: try uuid(row["token_id"]),
            notification: row["notification"], sendAt: date("send_at"), recurrence: recurrence, nextAt: date("next_at"),
            status: try enumValue(row["status"]), sentCount: row["sent_count"], lastError: row["last_error"],
            lastNotificationID: try (row["last_notification_id"] as String?).map(uuid),
            createdAt: Date(timeIntervalSince1970: row["created_at"]), updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            canceledAt: date("canceled_at"))
    }

    public func insertScheduledSend(_ send: ScheduledSend, maximumPending: Int) async throws -> Bool {
        try await write { db in
            let pending = try Int.fetchOne(
                db, sql: "SELECT count(*) FROM scheduled_send WHERE device_id = ? AND status = 'scheduled'",
                arguments: [send.deviceID.databaseString]) ?? 0
            guard pending < maximumPending else { return false }
            try db.execute(
                sql: "INSERT INTO scheduled_send (\(Self.columns)) VALUES (\(databaseQuestionMarks(count: 17)))", arguments: Self.arguments(send))
            return true
        }
    }

    public func scheduledSend(id: ScheduledSend.ID) async throws -> ScheduledSend? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM scheduled_send WHERE id = ?", arguments: [id.databaseString]).map(Self.scheduledSend)
        }
    }

    public func scheduledSends(tokenID: UUID, limit: Int) async throws -> [ScheduledSend] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM scheduled_send WHERE token_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
                arguments: [tokenID.databaseString, limit]
            ).map(Self.scheduledSend)
        }
    }

    public func cancelScheduledSend(id: ScheduledSend.ID, at date: Date) async throws -> ScheduledSend? {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE scheduled_send SET status = 'canceled', canceled_at = ?, updated_at = ?, next_at = NULL
                    WHERE id = ? AND status = 'scheduled'
                    """,
                arguments: [date.timeIntervalSince1970, date.timeIntervalSince1970, id.databaseString])
            return try Row.fetchOne(db, sql: "SELECT * FROM scheduled_send WHERE id = ?", arguments: [id.databaseString]).map(Self.scheduledSend)
        }
    }

    public func deleteScheduledSend(id: ScheduledSend.ID) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM scheduled_send WHERE id = ?", arguments: [id.databaseString]) }
    }

    public func deleteFinishedScheduledSends(finishedBefore: Date, canceledBefore: Date, limit: Int) async throws -> Int {
        let arguments: StatementArguments = [finishedBefore.timeIntervalSince1970, canceledBefore.timeIntervalSince1970, limit]
        let old = """
            SELECT id FROM scheduled_send
            WHERE (status IN ('sent', 'failed') AND updated_at < ?) OR (status = 'canceled' AND updated_at < ?) LIMIT ?
            """
        let due = try await read { db in try String.fetchAll(db, sql: old, arguments: arguments) }
        guard !due.isEmpty else { return 0 }
        return try await write { db in
            try db.execute(sql: "DELETE FROM scheduled_send WHERE id IN (\(old))", arguments: arguments)
            return db.changesCount
        }
    }

    public func claimDueScheduledSends(at now: Date, lease: Lease, limit: Int) async throws -> [ScheduledSend] {
        // Read first: nothing is written while nothing is due (the dispatcher asks every second).
        let due = try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM scheduled_send WHERE status = 'scheduled' AND next_at <= ?", arguments: [now.timeIntervalSince1970]) ?? 0
        }
        guard due > 0 else { return [] }
        return try await write { db in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE scheduled_send SET lease_owner = ?, lease_expires_at = ?
                    WHERE id IN (
                        SELECT id FROM scheduled_send
                        WHERE status = 'scheduled' AND next_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)
                        ORDER BY next_at LIMIT ?)
                    RETURNING *
                    """,
                arguments: [
                    lease.owner, lease.expiresAt.timeIntervalSince1970, now.timeIntervalSince1970, now.timeIntervalSince1970, limit,
                ]
            ).map(Self.scheduledSend).sorted { ($0.nextAt ?? now) < ($1.nextAt ?? now) }
        }
    }

    public func completeScheduledSend(_ send: ScheduledSend, owner: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE scheduled_send SET next_at = ?, status = ?, sent_count = ?, last_error = ?, last_notification_id = ?,
                        updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND lease_owner = ? AND status = 'scheduled'
                    """,
                arguments: [
                    send.nextAt?.timeIntervalSince1970, send.status.rawValue, send.sentCount, send.lastError,
                    send.lastNotificationID?.databaseString, send.updatedAt.timeIntervalSince1970, send.id.databaseString, owner,
                ])
            return db.changesCount == 1
        }
    }
}
