import Foundation
import GRDB
import HeraldCore

/// The callback outbox (issue 39, section 4) in the SQLite file: one row per callback, claimed when due with a lease.
extension SQLiteStore {
    /// The tables of migration v19.
    static let callbackSchema = """
        CREATE TABLE callback (
            id TEXT PRIMARY KEY NOT NULL,
            device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            token_id TEXT NOT NULL,
            url TEXT NOT NULL,
            event TEXT NOT NULL,
            body BLOB NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at REAL,
            status TEXT NOT NULL,
            last_error TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            lease_owner TEXT,
            lease_expires_at REAL
        );
        CREATE INDEX callback_due ON callback(next_attempt_at) WHERE status = 'pending';
        CREATE INDEX callback_device ON callback(device_id);
        CREATE INDEX callback_finished ON callback(updated_at) WHERE status <> 'pending';
        CREATE TABLE token_callback (
            token_id TEXT PRIMARY KEY NOT NULL,
            device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX token_callback_device ON token_callback(device_id);
        """

    private static let callbackColumns = """
        id, device_id, token_id, url, event, body, attempts, next_attempt_at, status, last_error, created_at, updated_at
        """

    private static func callback(_ row: Row) throws -> CallbackDelivery {
        CallbackDelivery(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), tokenID: try uuid(row["token_id"]), url: row["url"],
            event: try enumValue(row["event"]), body: row["body"], attempts: row["attempts"],
            nextAttemptAt: (row["next_attempt_at"] as Double?).map(Date.init(timeIntervalSince1970:)), status: try enumValue(row["status"]),
            lastError: row["last_error"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
    }

    public func enqueueCallback(_ callback: CallbackDelivery) async throws {
        let arguments: StatementArguments = [
            callback.id.databaseString, callback.deviceID.databaseString, callback.tokenID.databaseString, callback.url,
            callback.event.rawValue, callback.body, callback.attempts, callback.nextAttemptAt?.timeIntervalSince1970,
            callback.status.rawValue, callback.lastError, callback.createdAt.timeIntervalSince1970, callback.updatedAt.timeIntervalSince1970,
        ]
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [callback.deviceID.databaseString]) != nil else {
                throw StoreError.notFound("device")
            }
            try db.execute(
                sql: "INSERT INTO callback (\(Self.callbackColumns)) VALUES (\(databaseQuestionMarks(count: 12)))", arguments: arguments)
        }
    }

    public func callback(id: CallbackDelivery.ID) async throws -> CallbackDelivery? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM callback WHERE id = ?", arguments: [id.databaseString]).map(Self.callback)
        }
    }

    public func claimDueCallbacks(at now: Date, lease: Lease, limit: Int) async throws -> [CallbackDelivery] {
        let seconds = now.timeIntervalSince1970
        // Read first: nothing is written while nothing is due (the dispatcher asks every second).
        let due = try await read { db in
            try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM callback WHERE status = 'pending' AND next_attempt_at <= ?)", arguments: [seconds])
        }
        guard due == true else { return [] }
        return try await write { db in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE callback SET lease_owner = ?, lease_expires_at = ?
                    WHERE id IN (
                        SELECT id FROM callback
                        WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_owner IS NULL OR lease_expires_at <= ?)
                        ORDER BY next_attempt_at, created_at LIMIT ?)
                    RETURNING *
                    """,
                arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, seconds, seconds, max(0, limit)]
            ).map(Self.callback).sorted { ($0.nextAttemptAt ?? now, $0.createdAt) < ($1.nextAttemptAt ?? now, $1.createdAt) }
        }
    }

    public func completeCallbackAttempt(_ callback: CallbackDelivery, owner: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE callback SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ?,
                        lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND lease_owner = ? AND status = 'pending'
                    """,
                arguments: [
                    callback.status.rawValue, callback.attempts, callback.nextAttemptAt?.timeIntervalSince1970, callback.lastError,
                    callback.updatedAt.timeIntervalSince1970, callback.id.databaseString, owner,
                ])
            return db.changesCount == 1
        }
    }

    public func deleteFinishedCallbacks(before date: Date, limit: Int) async throws -> Int {
        let arguments: StatementArguments = [date.timeIntervalSince1970, max(0, limit)]
        let old = "SELECT id FROM callback WHERE status <> 'pending' AND updated_at < ? LIMIT ?"
        let any = try await read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (\(old))", arguments: arguments) }
        guard any == true else { return 0 }
        return try await write { db in
            try db.execute(sql: "DELETE FROM callback WHERE id IN (\(old))", arguments: arguments)
            return db.changesCount
        }
    }

    public func setTokenCallbackURL(_ url: String?, tokenID: UUID, deviceID: Device.ID, at date: Date) async throws {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [deviceID.databaseString]) != nil else {
                throw StoreError.notFound("device")
            }
            if let url {
                try db.execute(
                    sql: """
                        INSERT INTO token_callback (token_id, device_id, url, updated_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT (token_id) DO UPDATE SET url = excluded.url, updated_at = excluded.updated_at
                        """,
                    arguments: [tokenID.databaseString, deviceID.databaseString, url, date.timeIntervalSince1970])
            } else {
                try db.execute(sql: "DELETE FROM token_callback WHERE token_id = ?", arguments: [tokenID.databaseString])
            }
        }
    }

    public func tokenCallbackURL(tokenID: UUID) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT url FROM token_callback WHERE token_id = ?", arguments: [tokenID.databaseString])
        }
    }
}
