import Foundation
import GRDB
import HeraldCore

/// The embedded default store: one SQLite file in WAL mode, through GRDB.
///
/// ```swift
/// let store = try SQLiteStore(path: "herald.sqlite")   // creates or migrates the schema
/// ```
public final class SQLiteStore: HeraldStore {
    let database: DatabasePool

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // WAL is DatabasePool's journal mode; FULL makes every committed transaction survive power loss too.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        database = try DatabasePool(path: path, configuration: configuration)
        try SQLiteMigrations.migrator.migrate(database)
    }

    /// The SQLite journal mode in force (`wal`).
    public func journalMode() async throws -> String {
        try await database.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    // MARK: Devices

    public func insertDevice(_ device: Device) async throws {
        try await database.write { db in
            try Self.moveToken(to: device, db)
            try db.execute(
                sql: """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                        inactive_reason, daily_limit, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: Self.arguments(device))
        }
    }

    public func updateDevice(_ device: Device) async throws {
        try await database.write { db in
            try Self.moveToken(to: device, db)
            try db.execute(
                sql: """
                    UPDATE device SET id = ?, user_id_hash = ?, secret_hash = ?, platform = ?, environment = ?, token = ?,
                        is_active = ?, inactive_reason = ?, daily_limit = ?, created_at = ?, updated_at = ?
                    WHERE id = ?
                    """,
                arguments: Self.arguments(device) + [device.id.databaseString])
            if db.changesCount == 0 { throw StoreError.notFound("device") }
        }
    }

    private static func moveToken(to device: Device, _ db: GRDB.Database) throws {
        guard let token = device.token else { return }
        try db.execute(
            sql: """
                UPDATE device SET token = NULL, is_active = 0, inactive_reason = ?, updated_at = ?
                WHERE platform = ? AND token = ? AND id != ?
                """,
            arguments: [
                StoreError.tokenMovedReason, device.updatedAt.timeIntervalSince1970, device.platform.rawValue, token,
                device.id.databaseString,
            ])
    }

    public func device(userIDHash: String) async throws -> Device? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM device WHERE user_id_hash = ?", arguments: [userIDHash]).map(Self.device)
        }
    }

    public func device(id: Device.ID) async throws -> Device? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM device WHERE id = ?", arguments: [id.databaseString]).map(Self.device)
        }
    }

    public func deleteDevice(id: Device.ID) async throws {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM device WHERE id = ?", arguments: [id.databaseString])
        }
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE device SET is_active = 0, inactive_reason = ?, updated_at = ? WHERE id = ? AND token = ?",
                arguments: [reason, date.timeIntervalSince1970, id.databaseString, token])
        }
    }

    // MARK: Notifications

    public func accept(_ notification: PushNotification, quota: QuotaRequest) async throws -> AcceptDecision {
        try await database.write { db in
            let deviceID = notification.deviceID.databaseString
            let attempt = quota.countsAttempt ? 1 : 0
            try db.execute(
                sql: """
                    INSERT INTO quota_counter (device_id, day, attempts) VALUES (?, ?, ?)
                    ON CONFLICT (device_id, day) DO UPDATE SET attempts = attempts + excluded.attempts
                    """,
                arguments: [deviceID, quota.day, attempt])
            if let maximum = quota.maximum {
                let counters = try Self.counters(deviceID: deviceID, day: quota.day, db)
                if counters.successful >= maximum { return .quotaExceeded(counters) }
                try db.execute(
                    sql: "UPDATE quota_counter SET successful = successful + 1, total = total + 1 WHERE device_id = ? AND day = ?",
                    arguments: [deviceID, quota.day])
            }
            try db.execute(
                sql: """
                    INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status,
                        attempts, last_error, provider_message_id, created_at, updated_at, next_attempt_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: Self.arguments(notification))
            return .accepted(try Self.counters(deviceID: deviceID, day: quota.day, db))
        }
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM notification WHERE id = ?", arguments: [id.databaseString])
                .map(Self.notification)
        }
    }

    public func dueNotifications(at date: Date, platforms: Set<Platform>, limit: Int) async throws -> [PushNotification] {
        guard !platforms.isEmpty else { return [] }
        let placeholders = Array(repeating: "?", count: platforms.count).joined(separator: ", ")
        let arguments: StatementArguments =
            [date.timeIntervalSince1970] + StatementArguments(platforms.map(\.rawValue).sorted()) + [limit]
        return try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT notification.* FROM notification JOIN device ON device.id = notification.device_id
                    WHERE notification.status = 'pending' AND notification.next_attempt_at <= ?
                        AND device.platform IN (\(placeholders))
                    ORDER BY notification.next_attempt_at, notification.created_at, notification.id
                    LIMIT ?
                    """,
                arguments: arguments
            ).map(Self.notification)
        }
    }

    public func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notification WHERE device_id = ? AND status = 'pending'
                    ORDER BY created_at, id LIMIT ?
                    """,
                arguments: [deviceID.databaseString, limit]
            ).map(Self.notification)
        }
    }

    public func updateNotification(_ notification: PushNotification, releaseQuota: Bool) async throws {
        try await database.write { db in
            let id = notification.id.databaseString
            guard
                let stored = try Row.fetchOne(
                    db, sql: "SELECT status, quota_day, device_id FROM notification WHERE id = ?", arguments: [id])
            else { throw StoreError.notFound("notification") }
            if releaseQuota, stored["status"] == DeliveryStatus.pending.rawValue,
                let day: String = stored["quota_day"]
            {
                try db.execute(
                    sql: """
                        UPDATE quota_counter SET successful = MAX(successful - 1, 0), errors = errors + 1
                        WHERE device_id = ? AND day = ?
                        """,
                    arguments: [stored["device_id"] as String, day])
            }
            try db.execute(
                sql: """
                    UPDATE notification SET status = ?, attempts = ?, last_error = ?, provider_message_id = ?,
                        updated_at = ?, next_attempt_at = ?, expires_at = ?
                    WHERE id = ?
                    """,
                arguments: [
                    notification.status.rawValue, notification.attempts, notification.lastError,
                    notification.providerMessageID, notification.updatedAt.timeIntervalSince1970,
                    notification.nextAttemptAt.timeIntervalSince1970, notification.expiresAt.timeIntervalSince1970, id,
                ])
        }
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        try await database.read { db in try Self.counters(deviceID: deviceID.databaseString, day: day, db) }
    }

    // MARK: Lifecycle

    public func isReachable() async -> Bool {
        (try? await database.read { db in try Int.fetchOne(db, sql: "SELECT 1") }) == 1
    }

    public func close() async throws {
        try database.close()
    }

    // MARK: Rows

    private static func counters(deviceID: String, day: String, _ db: GRDB.Database) throws -> QuotaCounters {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT attempts, successful, errors, total FROM quota_counter WHERE device_id = ? AND day = ?",
                arguments: [deviceID, day])
        else { return QuotaCounters() }
        return QuotaCounters(attempts: row["attempts"], successful: row["successful"], errors: row["errors"], total: row["total"])
    }

    private static func arguments(_ device: Device) -> StatementArguments {
        [
            device.id.databaseString, device.userIDHash, device.secretHash, device.platform.rawValue,
            device.environment.rawValue, device.token, device.isActive, device.inactiveReason, device.dailyLimit,
            device.createdAt.timeIntervalSince1970, device.updatedAt.timeIntervalSince1970,
        ]
    }

    private static func device(_ row: Row) throws -> Device {
        Device(
            id: try uuid(row["id"]), userIDHash: row["user_id_hash"], secretHash: row["secret_hash"],
            platform: try enumValue(row["platform"]), environment: try enumValue(row["environment"]), token: row["token"],
            isActive: row["is_active"], inactiveReason: row["inactive_reason"], dailyLimit: row["daily_limit"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
    }

    private static func arguments(_ notification: PushNotification) -> StatementArguments {
        [
            notification.id.databaseString, notification.deviceID.databaseString, notification.pushType.rawValue,
            notification.priority, notification.collapseID, notification.payload, notification.quotaDay,
            notification.status.rawValue, notification.attempts, notification.lastError, notification.providerMessageID,
            notification.createdAt.timeIntervalSince1970, notification.updatedAt.timeIntervalSince1970,
            notification.nextAttemptAt.timeIntervalSince1970, notification.expiresAt.timeIntervalSince1970,
        ]
    }

    private static func notification(_ row: Row) throws -> PushNotification {
        PushNotification(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), pushType: try enumValue(row["push_type"]),
            priority: row["priority"], collapseID: row["collapse_id"], payload: row["payload"], quotaDay: row["quota_day"],
            status: try enumValue(row["status"]), attempts: row["attempts"], lastError: row["last_error"],
            providerMessageID: row["provider_message_id"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            nextAttemptAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
            expiresAt: Date(timeIntervalSince1970: row["expires_at"]))
    }

    private static func uuid(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw CorruptRow(detail: "bad id \(text)") }
        return id
    }

    private static func enumValue<Value: RawRepresentable>(_ text: String) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: text) else { throw CorruptRow(detail: "unknown value \(text)") }
        return value
    }

    private struct CorruptRow: Error {
        var detail: String
    }
}

extension UUID {
    /// The lowercase text form ids are stored in.
    var databaseString: String { uuidString.lowercased() }
}
