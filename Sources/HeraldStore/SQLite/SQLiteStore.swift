import Foundation
import GRDB
import HeraldCore
import Logging
import Synchronization

/// The embedded default store: one SQLite file in WAL mode, through GRDB.
///
/// ```swift
/// let store = try SQLiteStore(path: "herald.sqlite")   // creates or migrates the schema
/// ```
///
/// Every statement on a hot path is a cached prepared statement (`cachedStatement(sql:)`: compiled once per
/// connection). Writes come in batches (``commit(_:)``, the group commit); devices are cached in memory
/// (``DeviceCache``) and the cache entry is dropped on every write to the device.
public final class SQLiteStore: HeraldStore {
    let database: DatabasePool
    let devices = DeviceCache()
    /// Device lookups that miss the cache, read in batches on the writer's connection, between commits. A reader
    /// connection finds the file changed at every read under load and, in WAL mode, drops its whole page cache and
    /// unmaps the file first, so each lookup faulted its pages in again; the writer's own commits never invalidate its
    /// cache (docs/performance.md, scenario 5: "Device lookups on the writer's connection").
    private let deviceReads: Batcher<DeviceKey, Device?>
    private let checkpointer: WALCheckpointer
    private let writeHealth: StoreWriteHealth
    private let writeTransactions = Atomic(0)
    private let scheduleReads = Atomic(0)

    /// The log size (pages) from which it is checkpointed: 10,000 (about 40 MB), ten times SQLite's default
    /// (``WALCheckpointer``).
    public static let defaultCheckpointPages = 10_000

    /// Opens (creating if needed) the database at `path` and brings its schema up to date. With `maximumBytes`, the
    /// file never grows beyond it: a write that would need more fails as on a full disk. `checkpointPages`: the log
    /// size (pages) from which it is copied back into the database file (``WALCheckpointer``).
    public init(
        path: String, maximumBytes: Int? = nil, checkpointPages: Int = SQLiteStore.defaultCheckpointPages,
        logger: Logger = Logger(label: "herald.store")
    ) throws {
        writeHealth = StoreWriteHealth(logger: logger, storageFailure: Self.diskFailure)
        let checkpointer = WALCheckpointer(threshold: checkpointPages, logger: logger)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        // Few readers share the work (status reads, the dashboard): each warms its own page cache.
        configuration.maximumReaderCount = 2
        configuration.prepareDatabase { db in
            // Large stores (a million devices): pages are read through a memory map (no copy per page read) and
            // kept in a page cache of up to 64 MiB per connection (allocated as pages are read). Under load a reader
            // finds the database changed at every read and, in WAL mode, drops its page cache and unmaps the file;
            // the memory map still beats reading every page again (docs/performance.md, scenario 5).
            try db.execute(sql: "PRAGMA mmap_size = 1073741824")
            try db.execute(sql: "PRAGMA cache_size = -65536")
            if let maximumBytes {
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4_096
                try db.execute(sql: "PRAGMA max_page_count = \(max(1, maximumBytes / pageSize))")
            }
            // Checkpoints run on a connection of their own, not inside a commit (``WALCheckpointer``).
            checkpointer.watch(db)
        }
        database = try DatabasePool(path: path, configuration: configuration)
        // FULL makes every committed transaction survive power loss too. It is set here, not in `prepareDatabase`:
        // GRDB sets up WAL mode (DatabasePool's journal mode) after that and turns the writer to `synchronous =
        // NORMAL` ("many applications choose NORMAL in WAL mode"), under which commits reach the log without an fsync
        // and a power loss could take notifications that were answered 2xx. The writer is the pool's one connection
        // that commits, for the pool's whole life; readers never commit.
        try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        try SQLiteMigrations.migrator.migrate(database)
        try checkpointer.open(path: path)
        self.checkpointer = checkpointer
        deviceReads = Batcher(maximumBatch: 256) { [database] keys in
            do {
                // Each statement is its own read; no transaction, so nothing waits on a commit of this batch.
                let devices = try await database.writeWithoutTransaction { db in try keys.map { try Self.device($0, db) } }
                return devices.map { .success($0) }
            } catch {
                return keys.map { _ in .failure(error) }
            }
        }
    }

    /// Write transactions committed by this instance (tests check that the group commit batches).
    public var committedWriteTransactions: Int { writeTransactions.load(ordering: .relaxed) }
    /// Reads of the outbox schedule (``scheduledAttempts(at:limit:)``) by this instance.
    public var scheduleReadCount: Int { scheduleReads.load(ordering: .relaxed) }

    /// A write transaction, counted; a failure of the disk is remembered and logged (``StoreWriteHealth``) until the
    /// readiness probe writes again.
    func write<T: Sendable>(_ body: @Sendable @escaping (GRDB.Database) throws -> T) async throws -> T {
        let result: T
        do {
            result = try await database.write(body)
        } catch {
            writeHealth.failed(error)
            throw error
        }
        writeTransactions.add(1, ordering: .relaxed)
        return result
    }

    /// The description of `error` when the disk, not the request, is at fault (full, read-only, I/O errors).
    @Sendable static func diskFailure(_ error: any Error) -> String? {
        guard let error = error as? DatabaseError,
            [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode)
        else { return nil }
        return "\(error.resultCode): \(error.message ?? "no message")"
    }

    /// The SQLite journal mode in force (`wal`).
    public func journalMode() async throws -> String {
        try await database.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    // MARK: Devices

    public func insertDevice(_ device: Device) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                        inactive_reason, daily_limit, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: Self.arguments(device))
        }
        devices.invalidate(id: device.id)
    }

    public func updateDevice(_ device: Device) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE device SET id = ?, user_id_hash = ?, secret_hash = ?, platform = ?, environment = ?, token = ?,
                        is_active = ?, inactive_reason = ?, daily_limit = ?, created_at = ?, updated_at = ?
                    WHERE id = ?
                    """
            ).execute(arguments: Self.arguments(device) + [device.id.databaseString])
            if db.changesCount == 0 { throw StoreError.notFound("device") }
        }
        devices.invalidate(id: device.id)
    }

    /// Kept by triggers in `device_count` (migration v4): one row read, whatever the number of devices.
    public func deviceCount() async throws -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT count FROM device_count WHERE id = 1") ?? 0 }
    }

    public func device(userIDHash: String) async throws -> Device? {
        if let cached = devices.device(userIDHash: userIDHash) { return cached }
        let generation = devices.generation
        let device = try await deviceReads.submit(.userIDHash(userIDHash))
        if let device { devices.remember(device, readSince: generation) }
        return device
    }

    public func device(id: Device.ID) async throws -> Device? {
        if let cached = devices.device(id: id) { return cached }
        let generation = devices.generation
        let device = try await deviceReads.submit(.id(id))
        if let device { devices.remember(device, readSince: generation) }
        return device
    }

    /// How a device is looked up.
    enum DeviceKey: Sendable {
        case id(Device.ID)
        case userIDHash(String)
    }

    private static func device(_ key: DeviceKey, _ db: GRDB.Database) throws -> Device? {
        switch key {
        case .id(let id):
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM device WHERE id = ?"), arguments: [id.databaseString])
                .map(Self.device)
        case .userIDHash(let hash):
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM device WHERE user_id_hash = ?"), arguments: [hash])
                .map(Self.device)
        }
    }

    public func deleteDevice(id: Device.ID) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM device WHERE id = ?", arguments: [id.databaseString])
        }
        devices.invalidate(id: id)
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        let deactivated = try await write { db in try Self.deactivate(token: token, usedFor: id, reason: reason, at: date, db) }
        for id in deactivated { devices.invalidate(id: id) }
    }

    /// Deactivates every device of `deviceID`'s platform bound to the dead `token`; returns their ids.
    private static func deactivate(
        token: String, usedFor deviceID: Device.ID, reason: String, at date: Date, _ db: GRDB.Database
    ) throws -> [Device.ID] {
        let ids = try String.fetchAll(
            db.cachedStatement(
                sql: """
                    UPDATE device SET is_active = 0, inactive_reason = ?, updated_at = ?
                    WHERE token = ? AND platform = (SELECT platform FROM device WHERE id = ?)
                    RETURNING id
                    """),
            arguments: [reason, date.timeIntervalSince1970, token, deviceID.databaseString])
        return try ids.map(uuid)
    }

    // MARK: Notifications

    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        let (decisions, deactivated) = try await write { db in
            let decisions = try batch.accepts.map { try Self.accept($0, db) }
            let deactivated = try batch.outcomes.flatMap { try Self.save($0, owner: batch.owner, db) }
            try batch.gate?.pass()  // throws: rolled back
            return (decisions, deactivated)
        }
        for id in deactivated { devices.invalidate(id: id) }
        return decisions
    }

    private static func accept(_ request: AcceptRequest, _ db: GRDB.Database) throws -> AcceptDecision {
        let notification = request.notification
        let quota = request.quota
        let deviceID = notification.deviceID.databaseString
        guard
            let counted = try firstRow(
                db.cachedStatement(
                    sql: """
                        INSERT INTO quota_counter (device_id, day, attempts) VALUES (?, ?, ?)
                        ON CONFLICT (device_id, day) DO UPDATE SET attempts = attempts + excluded.attempts
                        RETURNING attempts, successful, errors, total, limit_announced
                        """),
                [deviceID, quota.day, quota.countsAttempt ? 1 : 0], read: QuotaRow.init)
        else { throw StoreError.notFound("quota counter") }
        var counters = counted.counters
        var usedUpQuota = false
        if let refused = try refusal(by: quota, counters: counters, deviceID: deviceID, db) { return refused }
        if let maximum = quota.maximum {
            if counters.successful >= maximum { return .quotaExceeded(counters) }
            guard
                let updated = try firstRow(
                    db.cachedStatement(
                        sql: """
                            UPDATE quota_counter SET successful = successful + 1, total = total + 1,
                                limit_announced = CASE WHEN successful + 1 >= ? THEN 1 ELSE limit_announced END
                            WHERE device_id = ? AND day = ?
                            RETURNING attempts, successful, errors, total, limit_announced
                            """),
                    [maximum, deviceID, quota.day], read: QuotaRow.init)
            else { throw StoreError.notFound("quota counter") }
            counters = updated.counters
            usedUpQuota = !counted.limitAnnounced && updated.limitAnnounced
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status,
                    attempts, last_error, provider_message_id, created_at, updated_at, next_attempt_at, expires_at,
                    live_activity_token, lease_owner, lease_expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: Self.arguments(notification) + [request.lease?.owner, request.lease?.expiresAt.timeIntervalSince1970])
        return .accepted(counters, usedUpQuota: usedUpQuota)
    }

    /// Saves one outcome if `owner` still holds its lease; returns the devices a dead token deactivated.
    private static func save(_ outcome: DeliveryOutcome, owner: String, _ db: GRDB.Database) throws -> [Device.ID] {
        let notification = outcome.notification
        guard
            let quotaDay = try firstRow(
                db.cachedStatement(
                    sql: """
                        UPDATE notification SET status = ?, attempts = ?, last_error = ?, provider_message_id = ?,
                            updated_at = ?, next_attempt_at = ?, expires_at = ?, parked = ?,
                            lease_owner = NULL, lease_expires_at = NULL
                        WHERE id = ? AND lease_owner = ? AND status = 'pending'
                        RETURNING quota_day
                        """),
                [
                    notification.status.rawValue, notification.attempts, notification.lastError,
                    notification.providerMessageID, notification.updatedAt.timeIntervalSince1970,
                    notification.nextAttemptAt.timeIntervalSince1970, notification.expiresAt.timeIntervalSince1970,
                    outcome.isParked, notification.id.databaseString, owner,
                ], read: { row -> String? in row[0] })
        else { return [] }  // the lease was lost (taken over) or the notification is gone: nothing to save
        if outcome.releasesQuota, let day = quotaDay {
            try db.cachedStatement(
                sql: """
                    UPDATE quota_counter SET successful = MAX(successful - 1, 0), errors = errors + 1
                    WHERE device_id = ? AND day = ?
                    """
            ).execute(arguments: [notification.deviceID.databaseString, day])
        }
        guard let token = outcome.deadToken else { return [] }
        return try deactivate(
            token: token, usedFor: notification.deviceID, reason: notification.lastError ?? "dead token", at: notification.updatedAt, db)
    }

    public func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] {
        guard !ids.isEmpty else { return [] }
        return try await write { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE notification SET lease_owner = ?, lease_expires_at = ?
                    WHERE id = ? AND status = 'pending' AND next_attempt_at <= ?
                        AND (lease_owner IS NULL OR lease_expires_at <= ?)
                    RETURNING *
                    """)
            return try ids.compactMap { id in
                try Row.fetchOne(
                    statement,
                    arguments: [
                        lease.owner, lease.expiresAt.timeIntervalSince1970, id.databaseString, now.timeIntervalSince1970,
                        now.timeIntervalSince1970,
                    ]
                ).map(Self.notification)
            }
        }
    }

    public func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] {
        try await write { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE notification SET lease_owner = ?, lease_expires_at = ?, parked = 0
                        WHERE id IN (
                            SELECT id FROM notification
                            WHERE device_id = ? AND status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= ?)
                            ORDER BY created_at, id LIMIT ?)
                        RETURNING *
                        """),
                arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, deviceID.databaseString, now.timeIntervalSince1970, limit]
            ).map(Self.notification).sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
        }
    }

    public func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] {
        scheduleReads.add(1, ordering: .relaxed)
        return try await database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, next_attempt_at, device_id FROM notification
                        WHERE status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= ?)
                        ORDER BY next_attempt_at LIMIT ?
                        """),
                arguments: [now.timeIntervalSince1970, limit]
            ).map { row in
                ScheduledAttempt(
                    id: try Self.uuid(row["id"]), dueAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
                    deviceID: try Self.uuid(row["device_id"]))
            }
        }
    }

    public func renewLeases(owner: String, until expiry: Date) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE notification SET lease_expires_at = ? WHERE lease_owner = ?")
                .execute(arguments: [expiry.timeIntervalSince1970, owner])
        }
    }

    public func releaseLeases(owner: String) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE notification SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?", arguments: [owner])
        }
    }

    public func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int {
        guard !platforms.isEmpty else { return 0 }
        return try await write { db in
            try db.execute(
                sql: Self.unparkStatement(platformCount: platforms.count),
                arguments: [now.timeIntervalSince1970] + StatementArguments(platforms.map(\.rawValue).sorted()))
            return db.changesCount
        }
    }

    /// Runs at every start: it must cost what the parked notifications cost, not what the devices do. It walks the
    /// partial index of parked notifications and looks each one's device up by its key; the earlier form
    /// (`device_id IN (SELECT id FROM device …)`) listed every device first and held the writer for seconds on a
    /// store of a million devices (docs/performance.md, scenario 5).
    static func unparkStatement(platformCount: Int) -> String {
        let placeholders = Array(repeating: "?", count: platformCount).joined(separator: ", ")
        return """
            UPDATE notification INDEXED BY notification_parked SET parked = 0, next_attempt_at = ?
            WHERE parked = 1 AND status = 'pending' AND EXISTS (
                SELECT 1 FROM device
                WHERE device.id = notification.device_id AND device.token IS NOT NULL
                    AND device.platform IN (\(placeholders)))
            """
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await database.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM notification WHERE id = ?"), arguments: [id.databaseString])
                .map(Self.notification)
        }
    }

    public func lease(of id: PushNotification.ID) async throws -> Lease? {
        try await database.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT lease_owner, lease_expires_at FROM notification WHERE id = ?", arguments: [id.databaseString]),
                let owner: String = row["lease_owner"], let expiry: Double = row["lease_expires_at"]
            else { return nil }
            return Lease(owner: owner, expiresAt: Date(timeIntervalSince1970: expiry))
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

    public func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth {
        try await database.read { db in
            // Both counts walk the partial index notification_due (pending rows only), at most `limit` entries each.
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending' LIMIT ?)),
                               (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending' AND next_attempt_at <= ? LIMIT ?))
                        """),
                arguments: [limit, now.timeIntervalSince1970, limit])
            return OutboxDepth(pending: row?[0] ?? 0, due: row?[1] ?? 0)
        }
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        try await database.read { db in
            try Self.firstRow(
                db.cachedStatement(
                    sql: """
                        SELECT attempts, successful, errors, total, limit_announced FROM quota_counter
                        WHERE device_id = ? AND day = ?
                        """),
                [deviceID.databaseString, day], read: QuotaRow.init
            )?.counters ?? QuotaCounters()
        }
    }

    // MARK: Lifecycle

    public func readiness() async -> StoreReadiness {
        guard (try? await database.read { db in try Int.fetchOne(db, sql: "SELECT 1") }) == 1 else { return .unreachable }
        guard writeHealth.failure != nil else { return .ready }
        // The last write failed: try one that needs new pages (8 KiB), and roll it back.
        do {
            try await database.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "INSERT INTO readiness_probe (filler) VALUES (zeroblob(8192))")
                    return .rollback
                }
            }
            writeHealth.succeeded()
            return .ready
        } catch {
            writeHealth.failed(error)
            return .cannotWrite(writeHealth.failure ?? "\(error)")
        }
    }

    public func close() async throws {
        try checkpointer.close()
        try database.close()
    }

    /// WAL checkpoints run so far, all on the checkpointer's connection (tests check that commits do not run them).
    var completedCheckpoints: Int { checkpointer.completedCheckpoints }

    // MARK: Rows

    /// The first row a statement returns, read by `read` while the statement is on it; `nil` if it returns none. The
    /// commit's statements read their `RETURNING` columns this way, by position: `Row.fetchOne` copies the row and
    /// its column names, and a column read by name lowercases the name and searches for it (docs/performance.md,
    /// "Ids as text").
    private static func firstRow<Value>(
        _ statement: Statement, _ arguments: StatementArguments, read: (Row) throws -> Value
    ) throws -> Value? {
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        return try withExtendedLifetime(rows) { try rows.next().map(read) }
    }

    /// `attempts, successful, errors, total, limit_announced` of a quota counter row, by position.
    private struct QuotaRow {
        var counters: QuotaCounters
        var limitAnnounced: Bool

        init(_ row: Row) {
            counters = QuotaCounters(attempts: row[0], successful: row[1], errors: row[2], total: row[3])
            limitAnnounced = row[4]
        }
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
            notification.liveActivityToken,
        ]
    }

    static func notification(_ row: Row) throws -> PushNotification {
        PushNotification(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), pushType: try enumValue(row["push_type"]),
            priority: row["priority"], collapseID: row["collapse_id"], payload: row["payload"], quotaDay: row["quota_day"],
            status: try enumValue(row["status"]), attempts: row["attempts"], lastError: row["last_error"],
            providerMessageID: row["provider_message_id"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            nextAttemptAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
            expiresAt: Date(timeIntervalSince1970: row["expires_at"]), liveActivityToken: row["live_activity_token"])
    }

    static func uuid(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw CorruptRow(detail: "bad id \(text)") }
        return id
    }

    static func enumValue<Value: RawRepresentable>(_ text: String) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: text) else { throw CorruptRow(detail: "unknown value \(text)") }
        return value
    }

    private struct CorruptRow: Error {
        var detail: String
    }
}

extension UUID {
    /// The lowercase text form ids are stored in.
    var databaseString: String { lowercasedText }
}
