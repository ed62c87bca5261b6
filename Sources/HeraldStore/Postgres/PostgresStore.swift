import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Synchronization

/// The store on a PostgreSQL database, through PostgresNIO's `PostgresClient` (a connection pool).
///
/// ```swift
/// let store = try await PostgresStore(url: "postgres://herald:secret@127.0.0.1:5432/herald")  // migrates the schema
/// defer { try? await store.close() }
/// ```
///
/// The store owns its client: it runs the pool's `run()` in a task of its own from `init` (migrations need the pool
/// before anything else can start) and cancels it in ``close()``. So every user of a ``HeraldStore`` (the server,
/// whose store closer closes it at shutdown, and the `herald` tools, which open a store for one command) uses it the
/// same way as the SQLite store, without a service group to run it in.
///
/// The semantics are the SQLite store's, method by method (see the files beside this one): one statement per
/// ``commit(_:)`` (the group commit's batch, atomic: `herald_commit_batch`), quota counters locked and written in it,
/// claims that take leases with `FOR UPDATE SKIP LOCKED`, and devices cached in memory (``DeviceCache``), each entry
/// dropped on every instance when any instance writes the device. Several instances on one database work as one: they
/// tell each other what the tables do not say through `LISTEN`/`NOTIFY` (``PostgresCluster``: where WebSocket clients
/// are connected, notifications handed over, confirmations, device changes).
public final class PostgresStore: HeraldStore {
    let client: PostgresClient
    let devices = DeviceCache()
    /// This store's link to the other instances on the database.
    let presence: PostgresCluster
    let logger: Logger
    private let writeHealth: StoreWriteHealth
    private let running: Task<Void, Never>
    /// How long one call (a connection from the pool and its statements) may take; `nil`: as long as it takes.
    let callTimeout: Duration?
    private let deadlines = DeadlineAlarm()
    private let missedDeadlines: MissedDeadlines
    /// The statements this store sent (each one round trip), `BEGIN` and `COMMIT` included.
    let statements = StatementCount()
    /// The days whose notification partitions this store made or found (``ensurePartitions(for:force:)``).
    let partitionDays = Mutex<Set<Int>>([])
    /// How many notifications retention deleted as rows rather than with their day's partition (tests).
    let rowDeletions = StatementCount()
    /// The days whose receipt partitions this store made or found, and how many receipts retention deleted as rows
    /// (tests) (PostgresReceiptPartitions.swift).
    let receiptPartitionDays = Mutex<Set<Int>>([])
    let receiptRowDeletions = StatementCount()
    /// Device lookups that missed the cache, one statement per batch (PostgresDeviceReads.swift).
    let deviceReads: Batcher<DeviceKey, Device?>

    /// Connects to the database a `postgres://` URL names (``PostgresURL``) and brings its schema up to date.
    public convenience init(url: String, callTimeout: Duration? = nil, logger: Logger = Logger(label: "herald.store")) async throws {
        try await self.init(configuration: PostgresURL(url).clientConfiguration, callTimeout: callTimeout, logger: logger)
    }

    /// Connects with a client configuration of one's own (tests set a `search_path` in it) and brings the schema up to
    /// date. Throws ``StoreError/unavailable(_:)`` when that is not done within `startupTimeout` (the database cannot
    /// be reached: the pool logs each failed connection, and would otherwise keep trying for a minute).
    /// `callTimeout`: past it, a call (waiting for a connection included) throws ``StoreDeadlineExceeded`` and stops
    /// waiting for a connection (`HERALD_STORE_TIMEOUT_MS`).
    public init(
        configuration: PostgresClient.Configuration, startupTimeout: Duration = .seconds(30), callTimeout: Duration? = nil,
        logger: Logger = Logger(label: "herald.store")
    ) async throws {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.callTimeout = callTimeout
        missedDeadlines = MissedDeadlines(logger: logger)
        writeHealth = StoreWriteHealth(logger: logger, storageFailure: Self.storageFailure)
        presence = PostgresCluster(client: client, devices: devices, logger: logger)
        let reference = PostgresStoreReference()
        deviceReads = Batcher(maximumBatch: 256) { keys in await Self.lookUp(keys, in: reference.store) }
        // The pool must be running before the first lease (PostgresNIO warns otherwise): wait until the task starts it.
        let (started, start) = AsyncStream<Void>.makeStream()
        running = Task {
            start.finish()
            await client.run()
        }
        for await _ in started {}
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { [presence] in
                    try await PostgresMigrations.migrate(client, logger: logger)
                    try await PostgresClockCheck.check(client, logger: logger)
                    // One channel per schema: stores in other schemas of the database (tests) are other clusters.
                    let schema = try await client.query("SELECT current_schema()").collect().first?.decode(String.self) ?? "public"
                    try await presence.start(channel: "herald." + schema)
                }
                group.addTask {
                    try await Task.sleep(for: startupTimeout)
                    let address = "\(configuration.host ?? configuration.unixSocketPath ?? "?"):\(configuration.port ?? 5432)"
                    throw StoreError.unavailable("no connection to \(address) within \(startupTimeout) (the log says why)")
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch {
            await presence.stop()
            running.cancel()
            await running.value
            throw (error as? StoreError) ?? StoreError.unavailable(Self.describe(error))
        }
        reference.set(self)
    }

    /// The version of the schema (``PostgresMigrations``) the database is at.
    public func schemaVersion() async throws -> Int {
        try await PostgresMigrations.currentVersion(client)
    }

    // MARK: Statements

    /// Runs one statement that reads, and returns its rows.
    func read(_ query: PostgresQuery) async throws -> [PostgresRow] {
        statements.count()
        return try await call { try await self.client.query(query).collect() }
    }

    /// Runs one statement that writes (in a transaction of its own), and returns its rows (those of `RETURNING`).
    @discardableResult
    func write(_ query: PostgresQuery) async throws -> [PostgresRow] {
        statements.count()
        return try await call { try await self.watchingWrites { try await self.client.query(query).collect() } }
    }

    /// Runs one prepared statement that reads (prepared on its connection the first time), and returns its rows.
    func read<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] where Statement.Row: Sendable {
        statements.count()
        return try await call { try await self.rows(of: statement) }
    }

    /// Runs one prepared statement that writes (in a transaction of its own), and returns its rows.
    @discardableResult
    func write<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] where Statement.Row: Sendable {
        statements.count()
        return try await call { try await self.watchingWrites { try await self.rows(of: statement) } }
    }

    private func rows<Statement: PostgresPreparedStatement>(of statement: Statement) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await client.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// Runs `body` in one transaction. A transaction that PostgreSQL aborted for a deadlock or a serialization
    /// failure (two instances locking the same rows in opposite orders) rolled back entirely and is run again.
    func transaction<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await call {
            try await self.watchingWrites {
                var attempt = 1
                while true {
                    self.statements.count(2)  // BEGIN and COMMIT (or ROLLBACK)
                    do {
                        return try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) }
                    } catch let error as PostgresTransactionError {
                        guard attempt < Self.transactionAttempts, Self.isTransient(error.cause) else { throw error.cause }
                        attempt += 1
                    }
                }
            }
        }
    }

    private static let transactionAttempts = 5

    /// Runs one statement of a transaction and returns its rows.
    @discardableResult
    func execute(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> [PostgresRow] {
        statements.count()
        return try await connection.query(query, logger: logger).collect()
    }

    /// One call into the database. It runs apart from the calling task's cancellation, as every call into the SQLite
    /// store runs: a call that was made completes, or fails for the database's reasons. (PostgresNIO stops waiting for a
    /// connection when its caller is cancelled: a delivery engine cancelled at shutdown could not give its leases back.)
    /// Its errors say what the server said (``PostgresStoreError``). With ``callTimeout``, a call that has not
    /// finished by then (no connection came free, the database does not answer) is cancelled (PostgresNIO stops
    /// waiting for a connection) and throws ``StoreDeadlineExceeded``: during an outage requests are answered instead
    /// of piling up. A statement already sent may still run; a transaction is kept from committing by its caller's
    /// ``CommitGate``.
    private func call<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let mapped: @Sendable () async throws -> Result = {
            do {
                return try await body()
            } catch let error as PSQLError {
                throw PostgresStoreError(sqlState: Self.sqlState(error), description: Self.describe(error))
            }
        }
        guard let callTimeout else { return try await Task { try await mapped() }.value }
        do {
            return try await withStoreDeadline(callTimeout, what: "a connection and its statements", alarm: deadlines, mapped)
        } catch let error as StoreDeadlineExceeded {
            missedDeadlines.missed(error)
            throw error
        }
    }

    /// A write, whose failures of the storage are remembered for `/readyz` (until its probe writes again) and logged
    /// (``StoreWriteHealth``).
    private func watchingWrites<Result>(_ body: () async throws -> Result) async throws -> Result {
        let result: Result
        do {
            result = try await body()
        } catch {
            writeHealth.failed(error)
            throw error
        }
        return result
    }

    // MARK: Errors

    /// The SQLSTATE of a server error (`PSQLError`), if `error` is one.
    private static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A deadlock (40P01) or serialization failure (40001): the transaction may succeed if run again.
    private static func isTransient(_ error: any Error) -> Bool {
        ["40P01", "40001"].contains(sqlState(error))
    }

    /// The description of `error` when the database cannot write, whatever the request: insufficient resources
    /// (class 53: a full disk), a system error (class 58: I/O) or a read-only database (25006: a standby).
    @Sendable static func storageFailure(_ error: any Error) -> String? {
        guard let state = sqlState(error), state.hasPrefix("53") || state.hasPrefix("58") || state == "25006" else { return nil }
        return describe(error)
    }

    /// What the server or the connection said, without the query's values (`PSQLError`'s own description hides
    /// everything).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return "\(error.serverInfo?[.sqlState] ?? "?"): \(message)"
        }
        return [error.code.description, error.underlying.map { "\($0)" }].compactMap { $0 }.joined(separator: ": ")
    }

    // MARK: Lifecycle

    public func readiness() async -> StoreReadiness {
        guard (try? await read("SELECT 1").count) == 1 else { return .unreachable }
        guard writeHealth.failure != nil else { return .ready }
        // The last write failed: try one, and roll it back.
        do {
            try await probeWrite()
            writeHealth.succeeded()
            return .ready
        } catch {
            writeHealth.failed(error)
            return .cannotWrite(writeHealth.failure ?? Self.describe(error))
        }
    }

    /// Writes 8 KiB in a transaction that is then rolled back.
    private func probeWrite() async throws {
        struct RolledBack: Error {}
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "INSERT INTO readiness_probe (filler) VALUES (decode(repeat('00', 8192), 'hex'))", logger: logger)
                throw RolledBack()
            }
        } catch let error as PostgresTransactionError {
            if error.closureError is RolledBack, error.rollbackError == nil { return }
            throw error.cause
        }
    }

    public var cluster: (any Cluster)? { presence }

    public func close() async throws {
        await presence.stop()
        running.cancel()
        await running.value
    }
}

/// A count of the statements a store sent, for tests that hold a batch to a fixed number of round trips.
final class StatementCount: Sendable {
    private let value = Atomic<Int>(0)

    func count(_ statements: Int = 1) {
        value.wrappingAdd(statements, ordering: .relaxed)
    }

    var total: Int { value.load(ordering: .relaxed) }
}

/// Logs calls that passed their deadline: the first at once, then at most one line (with a count) per interval, so an
/// outage does not flood the log.
final class MissedDeadlines: Sendable {
    static let logInterval: Duration = .seconds(10)
    private let reports = Mutex(LogThrottle(interval: logInterval))
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func missed(_ error: StoreDeadlineExceeded) {
        let now = ContinuousClock.now
        guard let count = reports.withLock({ $0.record(at: now) }) else { return }
        logger.error(
            "PostgreSQL did not answer in time: requests are answered 503",
            metadata: ["error": "\(error)", "calls": "\(count)"])
    }
}

// MARK: Rows

extension PostgresRandomAccessRow {
    /// The value of one column.
    func value<Value: PostgresDecodable>(_ column: String, as type: Value.Type = Value.self) throws -> Value {
        try self[column].decode(Value.self)
    }

    /// A time stored as `double precision` seconds since 1970.
    func date(_ column: String) throws -> Date {
        Date(timeIntervalSince1970: try value(column, as: Double.self))
    }

    func optionalDate(_ column: String) throws -> Date? {
        try value(column, as: Double?.self).map(Date.init(timeIntervalSince1970:))
    }

    /// A value of an enumeration stored as its raw text.
    func enumValue<Value: RawRepresentable>(_ column: String) throws -> Value where Value.RawValue == String {
        let text = try value(column, as: String.self)
        guard let value = Value(rawValue: text) else { throw CorruptPostgresRow(detail: "unknown value \(text) in \(column)") }
        return value
    }
}

extension PostgresBindings {
    /// `$1`, `$2`, … bound to `values` in order; `nil` binds NULL.
    init(binding values: [(any PostgresThrowingDynamicTypeEncodable)?]) throws {
        self.init(capacity: values.count)
        for value in values {
            if let value { try append(value) } else { appendNull() }
        }
    }
}

extension PostgresTransactionError {
    /// What made the transaction fail: the error of its body, of `COMMIT`, of `BEGIN` or of `ROLLBACK`.
    var cause: any Error { closureError ?? commitError ?? beginError ?? rollbackError ?? self }
}

/// A failure of the PostgreSQL store, as the server or the connection reported it (without the query's values).
public struct PostgresStoreError: Error, Equatable, CustomStringConvertible {
    /// The SQLSTATE the server answered, when it answered (`23503`: a foreign key violated, for instance).
    public var sqlState: String?
    public var description: String
}

struct CorruptPostgresRow: Error {
    var detail: String
}
