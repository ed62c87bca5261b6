import Foundation
import GRDB
import HeraldCore

/// Receipts (issue 39, section 3: repeats until acknowledged) in the SQLite file: one row each, its next repeat claimed
/// when due with a lease.
extension SQLiteStore {
    /// The table of migration v18. No foreign key to the notification: a receipt outlives its first notification when
    /// the retention is shorter than its repeats, and it carries the content its repeats send.
    static let receiptSchema = """
        CREATE TABLE notification_receipt (
            id TEXT PRIMARY KEY NOT NULL,
            notification_id TEXT,
            device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            token_id TEXT NOT NULL,
            collapse_id TEXT NOT NULL,
            collapse_id_given INTEGER NOT NULL,
            tags TEXT NOT NULL,
            content BLOB NOT NULL,
            repeat_seconds INTEGER NOT NULL,
            expires_at REAL NOT NULL,
            next_repeat_at REAL NOT NULL,
            repeats_sent INTEGER NOT NULL,
            status TEXT NOT NULL,
            action_id TEXT,
            acknowledged_by_device TEXT,
            cancel_reason TEXT,
            created_at REAL NOT NULL,
            ended_at REAL,
            lease_owner TEXT,
            lease_expires_at REAL
        );
        CREATE INDEX notification_receipt_due ON notification_receipt(next_repeat_at) WHERE status = 'active';
        CREATE INDEX notification_receipt_device_active ON notification_receipt(device_id) WHERE status = 'active';
        CREATE INDEX notification_receipt_token_active ON notification_receipt(token_id, collapse_id) WHERE status = 'active';
        CREATE INDEX notification_receipt_ended ON notification_receipt(ended_at) WHERE status != 'active';
        """

    private static let receiptColumns = """
        id, notification_id, device_id, token_id, collapse_id, collapse_id_given, tags, content, repeat_seconds, expires_at,
        next_repeat_at, repeats_sent, status, action_id, acknowledged_by_device, cancel_reason, created_at, ended_at
        """

    private static func arguments(_ receipt: Receipt) -> StatementArguments {
        [
            receipt.id.databaseString, receipt.notificationID?.databaseString, receipt.deviceID.databaseString,
            receipt.tokenID.databaseString, receipt.collapseID, receipt.collapseIDGiven, ReceiptTags.text(receipt.tags), receipt.content,
            receipt.repeatSeconds, receipt.expiresAt.timeIntervalSince1970, receipt.nextRepeatAt.timeIntervalSince1970,
            receipt.repeatsSent, receipt.status.rawValue, receipt.actionID, receipt.acknowledgedByDevice?.databaseString,
            receipt.cancelReason, receipt.createdAt.timeIntervalSince1970, receipt.endedAt?.timeIntervalSince1970,
        ]
    }

    private static func receipt(_ row: Row) throws -> Receipt {
        Receipt(
            id: try uuid(row["id"]), notificationID: try (row["notification_id"] as String?).map(uuid), deviceID: try uuid(row["device_id"]),
            tokenID: try uuid(row["token_id"]), collapseID: row["collapse_id"], collapseIDGiven: row["collapse_id_given"],
            tags: ReceiptTags.tags(row["tags"]), content: row["content"], repeatSeconds: row["repeat_seconds"],
            expiresAt: Date(timeIntervalSince1970: row["expires_at"]), nextRepeatAt: Date(timeIntervalSince1970: row["next_repeat_at"]),
            repeatsSent: row["repeats_sent"], status: try enumValue(row["status"]), actionID: row["action_id"],
            acknowledgedByDevice: try (row["acknowledged_by_device"] as String?).map(uuid), cancelReason: row["cancel_reason"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]), endedAt: (row["ended_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    public func insertReceipt(_ receipt: Receipt, maximumActivePerDevice: Int) async throws -> Bool {
        try await write { db in
            // Active receipts of the device, less those this one replaces (same token, same sender-given collapse id).
            let active = try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM notification_receipt WHERE device_id = ? AND status = 'active'
                        AND NOT (? AND collapse_id_given AND token_id = ? AND collapse_id = ?)
                    """,
                arguments: [receipt.deviceID.databaseString, receipt.collapseIDGiven, receipt.tokenID.databaseString, receipt.collapseID]
            ) ?? 0
            guard active < maximumActivePerDevice else { return false }
            try db.execute(
                sql: "INSERT INTO notification_receipt (\(Self.receiptColumns)) VALUES (\(databaseQuestionMarks(count: 18)))",
                arguments: Self.arguments(receipt))
            return true
        }
    }

    public func activateReceipt(id: Receipt.ID, notificationID: PushNotification.ID, at date: Date) async throws -> [Receipt] {
        try await write { db in
            guard
                let receipt = try Row.fetchOne(
                    db, sql: "UPDATE notification_receipt SET notification_id = ? WHERE id = ? RETURNING *",
                    arguments: [notificationID.databaseString, id.databaseString]
                ).map(Self.receipt), receipt.collapseIDGiven
            else { return [] }
            return try Row.fetchAll(
                db,
                sql: """
                    UPDATE notification_receipt SET status = 'replaced', ended_at = ?, lease_owner = NULL, lease_expires_at = NULL
                    WHERE token_id = ? AND collapse_id = ? AND collapse_id_given AND status = 'active' AND id != ?
                    RETURNING *
                    """,
                arguments: [date.timeIntervalSince1970, receipt.tokenID.databaseString, receipt.collapseID, id.databaseString]
            ).map(Self.receipt)
        }
    }

    public func deleteReceipt(id: Receipt.ID) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM notification_receipt WHERE id = ?", arguments: [id.databaseString]) }
    }

    public func receipt(id: Receipt.ID) async throws -> Receipt? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM notification_receipt WHERE id = ?", arguments: [id.databaseString]).map(Self.receipt)
        }
    }

    public func receipts(ids: [Receipt.ID]) async throws -> [Receipt.ID: Receipt] {
        guard !ids.isEmpty else { return [:] }
        return try await read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM notification_receipt WHERE id IN (\(databaseQuestionMarks(count: ids.count)))",
                arguments: StatementArguments(ids.map(\.databaseString)))
            return Dictionary(try rows.map(Self.receipt).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }
    }

    public func activeReceipts(tokenID: UUID) async throws -> [Receipt] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM notification_receipt WHERE token_id = ? AND status = 'active' ORDER BY created_at, id",
                arguments: [tokenID.databaseString]
            ).map(Self.receipt)
        }
    }

    public func endReceipt(id: Receipt.ID, _ ending: ReceiptEnding, at date: Date) async throws -> Receipt? {
        var actionID: String?
        var device: String?
        var reason: String?
        switch ending {
        case .acknowledged(let action, let by): (actionID, device) = (action, by.databaseString)
        case .canceled(let why): reason = why
        case .expired: break
        }
        let arguments: StatementArguments = [
            ending.status.rawValue, date.timeIntervalSince1970, actionID, device, reason, id.databaseString,
        ]
        return try await write { db in
            try Row.fetchOne(
                db,
                sql: """
                    UPDATE notification_receipt SET status = ?, ended_at = ?, action_id = ?, acknowledged_by_device = ?, cancel_reason = ?,
                        lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND status = 'active' RETURNING *
                    """, arguments: arguments
            ).map(Self.receipt)
        }
    }

    public func claimDueReceipts(at now: Date, lease: Lease, limit: Int) async throws -> [Receipt] {
        let seconds = now.timeIntervalSince1970
        let unsent = seconds - ReceiptRules.unsentGrace
        // Read first: nothing is written while nothing is due (the dispatcher asks every second).
        let due = try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM notification_receipt WHERE status = 'active' AND next_repeat_at <= ?", arguments: [seconds]) ?? 0
        }
        guard due > 0 else { return [] }
        return try await write { db in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE notification_receipt SET lease_owner = ?, lease_expires_at = ?
                    WHERE id IN (
                        SELECT id FROM notification_receipt
                        WHERE status = 'active' AND next_repeat_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)
                            AND (notification_id IS NOT NULL OR created_at <= ?)
                        ORDER BY next_repeat_at LIMIT ?)
                    RETURNING *
                    """,
                arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, seconds, seconds, unsent, limit]
            ).map(Self.receipt).sorted { $0.nextRepeatAt < $1.nextRepeatAt }
        }
    }

    public func completeReceiptRepeat(_ receipt: Receipt, owner: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE notification_receipt SET repeats_sent = ?, next_repeat_at = ?, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND lease_owner = ? AND status = 'active'
                    """,
                arguments: [receipt.repeatsSent, receipt.nextRepeatAt.timeIntervalSince1970, receipt.id.databaseString, owner])
            return db.changesCount == 1
        }
    }

    public func deleteEndedReceipts(before cutoff: Date, limit: Int) async throws -> Int {
        let arguments: StatementArguments = [cutoff.timeIntervalSince1970, limit]
        let old = "SELECT id FROM notification_receipt WHERE status != 'active' AND ended_at < ? LIMIT ?"
        let due = try await read { db in try String.fetchAll(db, sql: old, arguments: arguments) }
        guard !due.isEmpty else { return 0 }
        return try await write { db in
            try db.execute(sql: "DELETE FROM notification_receipt WHERE id IN (\(old))", arguments: arguments)
            return db.changesCount
        }
    }
}
