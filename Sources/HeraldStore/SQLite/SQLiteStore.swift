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
    /// Reads wait here for a reader, not in GRDB's pool (``ReaderGate``): every read goes through ``read(_:)``.
    private let readerGate = ReaderGate(readers: SQLiteStore.readers)
    /// Reader connections: few readers share the work (status reads, the dashboard), each warms its own page cache.
    static let readers = 2
    let devices = DeviceCache()
    /// Device lookups that miss the cache, read in batches on the writer's connection, between commits. A reader
    /// connection finds the file changed at every read under load and, in WAL mode, drops its whole page cache and
    /// unmaps the file first, so each lookup faulted its pages in again; the writer's own commits never invalidate its
    /// cache (docs/performance.md, scenario 5: "Device lookups on the writer's connection").
    let deviceReads: Batcher<DeviceKey, Device?>
    /// Activity reads and writes, in batches on the writer's connection (``activityReadBatches(_:rows:)``).
    let activityReads: Batcher<ActivityRead, ActivityNeighbourhood>
    let activityWrites: Batcher<ActivityWrite, Bool>
    /// Activity rows as the writer last read or wrote them: a change's first try decides on its row without reading
    /// it (``ActivityRowCache``).
    let activityRows: ActivityRowCache
    /// API tokens recently looked up (``APITokenCache``).
    let apiTokenCache = APITokenCache()
    let checkpointer: WALCheckpointer
    let writeHealth: StoreWriteHealth
    let writeTransactions: WriteCount
    let scheduleReads = Atomic(0)

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
        let writeHealth = StoreWriteHealth(logger: logger, storageFailure: Self.diskFailure)
        let writeTransactions = WriteCount()
        self.writeHealth = writeHealth
        self.writeTransactions = writeTransactions
        let checkpointer = WALCheckpointer(threshold: checkpointPages, logger: logger)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        configuration.maximumReaderCount = Self.readers
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
        Self.useIncrementalVacuum(database, logger: logger)
        try checkpointer.open(path: path)
        self.checkpointer = checkpointer
        let activityRows = ActivityRowCache()
        self.activityRows = activityRows
        activityReads = Self.activityReadBatches(database, rows: activityRows)
        activityWrites = Self.activityWriteBatches(rows: activityRows) { [database, writeHealth, writeTransactions] body in
            try await Self.write(database, health: writeHealth, counting: writeTransactions, body)
        }
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
    public var committedWriteTransactions: Int { writeTransactions.value.load(ordering: .relaxed) }
    /// Reads of the outbox schedule (``scheduledAttempts(at:limit:)``) by this instance.
    public var scheduleReadCount: Int { scheduleReads.load(ordering: .relaxed) }

    /// A read, once a reader is free (``ReaderGate``); never GRDB's `database.read` directly.
    func read<T: Sendable>(_ body: @Sendable (GRDB.Database) throws -> T) async throws -> T {
        try await readerGate.admit { try await database.read(body) }
    }

    /// A write transaction, counted; a failure of the disk is remembered and logged (``StoreWriteHealth``) until the
    /// readiness probe writes again.
    func write<T: Sendable>(_ body: @Sendable @escaping (GRDB.Database) throws -> T) async throws -> T {
        try await Self.write(database, health: writeHealth, counting: writeTransactions, body)
    }

    private static func write<T: Sendable>(
        _ database: DatabasePool, health: StoreWriteHealth, counting count: WriteCount, _ body: @Sendable @escaping (GRDB.Database) throws -> T
    ) async throws -> T {
        let result: T
        do {
            result = try await database.write(body)
        } catch {
            health.failed(error)
            throw error
        }
        count.value.add(1, ordering: .relaxed)
        return result
    }

    /// Write transactions committed (a class, so that the activity write batches can count theirs too).
    final class WriteCount: Sendable {
        let value = Atomic(0)
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
        try await read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    // MARK: Devices

    public func insertDevice(_ device: Device) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                        inactive_reason, daily_limit, created_at, updated_at, address_data, push_to_start_token)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
                        is_active = ?, inactive_reason = ?, daily_limit = ?, created_at = ?, updated_at = ?,
                        address_data = ?, push_to_start_token = ?
                    WHERE id = ?
                    """
            ).execute(arguments: Self.arguments(device) + [device.id.databaseString])
            if db.changesCount == 0 { throw StoreError.notFound("device") }
        }
        devices.invalidate(id: device.id)
    }

    /// Kept by triggers in `device_count` (migration v4): one row read, whatever the number of devices.
    public func deviceCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count FROM device_count WHERE id = 1") ?? 0 }
    }

    public func activeTokens(platform: Platform) async throws -> [Device.ID: String] {
        try await read { db -> [Device.ID: String] in
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, token FROM device WHERE platform = ? AND is_active = 1 AND token IS NOT NULL",
                arguments: [platform.rawValue])
            return try rows.reduce(into: [:]) { tokens, row in tokens[try Self.uuid(row["id"])] = row["token"] }
        }
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

    static func device(_ key: DeviceKey, _ db: GRDB.Database) throws -> Device? {
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
        activityRows.forgetAll()  // its activities and API tokens went with it
        apiTokenCache.forgetAll()
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        let deactivated = try await write { db in try Self.deactivate(token: token, usedFor: id, reason: reason, at: date, db) }
        for id in deactivated { devices.invalidate(id: id) }
    }

    /// Deactivates every device of `deviceID`'s platform bound to the dead `token`; returns their ids.
    static func deactivate(
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

    // MARK: Lifecycle

    public func readiness() async -> StoreReadiness {
        guard (try? await read { db in try Int.fetchOne(db, sql: "SELECT 1") }) == 1 else { return .unreachable }
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

    /// Closes the checkpointer's connection and the pool, on a thread of its own. `DatabasePool.close()` blocks its
    /// thread until every reader is returned, and a reader is returned by the task that holds it, which needs a thread
    /// of Swift's cooperative pool (two on a two-core machine) to go on. Two stores closing on that pool at once held
    /// both its threads while the readers' tasks waited for one: a whole test process stopped, its 255 dispatch
    /// threads waiting for readers (with the scheduled-send and retention services, which read every second).
    public func close() async throws {
        let (checkpointer, database) = (self.checkpointer, self.database)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let closing = Thread {
                do {
                    try checkpointer.close()
                    try database.close()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            closing.name = "herald-sqlite-close"
            closing.start()
        }
    }

    /// WAL checkpoints run so far, all on the checkpointer's connection (tests check that commits do not run them).
    var completedCheckpoints: Int { checkpointer.completedCheckpoints }

    // MARK: Rows

    /// The first row a statement returns, read by `read` while the statement is on it; `nil` if it returns none. The
    /// commit's statements read their `RETURNING` columns this way, by position: `Row.fetchOne` copies the row and
    /// its column names, and a column read by name lowercases the name and searches for it (docs/performance.md,
    /// "Ids as text").
    static func firstRow<Value>(
        _ statement: Statement, _ arguments: StatementArguments, read: (Row) throws -> Value
    ) throws -> Value? {
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        return try withExtendedLifetime(rows) { try rows.next().map(read) }
    }

    /// `attempts, successful, errors, total, limit_announced` of a quota counter row, by position.
    struct QuotaRow {
        var counters: QuotaCounters
        var limitAnnounced: Bool

        init(_ row: Row) {
            counters = QuotaCounters(attempts: row[0], successful: row[1], errors: row[2], total: row[3])
            limitAnnounced = row[4]
        }
    }

    static func arguments(_ device: Device) -> StatementArguments {
        [
            device.id.databaseString, device.userIDHash, device.secretHash, device.platform.rawValue,
            device.environment.rawValue, device.token, device.isActive, device.inactiveReason, device.dailyLimit,
            device.createdAt.timeIntervalSince1970, device.updatedAt.timeIntervalSince1970, device.addressData,
            device.pushToStartToken,
        ]
    }

    static func device(_ row: Row) throws -> Device {
        Device(
            id: try uuid(row["id"]), userIDHash: row["user_id_hash"], secretHash: row["secret_hash"],
            platform: try enumValue(row["platform"]), environment: try enumValue(row["environment"]), token: row["token"],
            isActive: row["is_active"], inactiveReason: row["inactive_reason"], dailyLimit: row["daily_limit"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]), pushToStartToken: row["push_to_start_token"],
            addressData: row["address_data"])
    }

    static func arguments(_ notification: PushNotification) throws -> StatementArguments {
        [
            notification.id.databaseString, notification.deviceID.databaseString, notification.pushType.rawValue,
            notification.priority.apnsValue, notification.collapseID, notification.payload, notification.quotaDay,
            notification.status.rawValue, notification.attempts, notification.lastError, notification.providerMessageID,
            notification.createdAt.timeIntervalSince1970, notification.updatedAt.timeIntervalSince1970,
            notification.nextAttemptAt.timeIntervalSince1970, notification.expiresAt.timeIntervalSince1970,
            notification.liveActivityToken, try notification.content?.encoded(), notification.renderedBy,
        ]
    }

    static func notification(_ row: Row) throws -> PushNotification {
        PushNotification(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), pushType: try enumValue(row["push_type"]),
            priority: NotificationPriority(stored: row["priority"]), collapseID: row["collapse_id"], payload: row["payload"], quotaDay: row["quota_day"],
            status: try enumValue(row["status"]), attempts: row["attempts"], lastError: row["last_error"],
            providerMessageID: row["provider_message_id"], createdAt: Date(timeIntervalSince1970: row["created_at"]),
            updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            nextAttemptAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
            expiresAt: Date(timeIntervalSince1970: row["expires_at"]), liveActivityToken: row["live_activity_token"],
            renderedBy: row["rendered_by"], content: (row["content"] as Data?).flatMap(NotificationContent.init(stored:)))
    }

    static func uuid(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw CorruptRow(detail: "bad id \(text)") }
        return id
    }

    static func enumValue<Value: RawRepresentable>(_ text: String) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: text) else { throw CorruptRow(detail: "unknown value \(text)") }
        return value
    }

    struct CorruptRow: Error {
        var detail: String
    }
}

extension UUID {
    /// The lowercase text form ids are stored in.
    var databaseString: String { lowercasedText }
}
