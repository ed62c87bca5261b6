import Foundation
import HeraldStore
import PostgresNIO
import Synchronization

/// The PostgreSQL server of scenario 7: one connection pool to the database its URL names, through which the
/// benchmark creates and drops its own databases (`herald_bench_…`) and finds the server's processes whose CPU it
/// counts.
///
/// ```swift
/// let server = try await PostgresServer(url: "postgres://herald@127.0.0.1:5432/postgres")
/// let database = try await server.createDatabase()   // herald_bench_1a2b3c4d5e6f
/// …
/// try await server.dropDatabase(database.name)
/// await server.shutdown()
/// ```
final class PostgresServer: Sendable {
    /// A database the benchmark created: its name and the URL Herald is given.
    struct Database: Sendable {
        var name: String
        var url: String
    }

    /// The server's processes, as `pg_stat_activity` lists them (PostgreSQL 10 and later), found in this machine's
    /// /proc: PostgreSQL forks one backend per connection.
    struct Processes: Sendable, Equatable {
        /// The backends connected to the benchmark's database (Herald's pools and its `LISTEN` connection).
        var database: Set<Int32> = []
        /// The processes every database shares: the postmaster, the WAL writer, the checkpointer, the background
        /// writer, the autovacuum launcher…; their work is the benchmark's and that of anyone else using the server.
        var shared: Set<Int32> = []
        /// Backends connected to other databases (other users of a shared server; the benchmark's own connection to the
        /// database its URL names is left out).
        var others: Set<Int32> = []
        /// Whether the server's processes are visible here at all (not on another machine or in a container).
        var visible: Bool { !(database.isEmpty && shared.isEmpty) }
    }

    let url: String
    let client: PostgresClient
    private let running: Task<Void, Never>

    init(url: String) async throws {
        self.url = url
        let client = PostgresClient(configuration: try PostgresURL(url).clientConfiguration)
        self.client = client
        // The pool must be running before the first query (PostgresNIO warns otherwise).
        let (started, start) = AsyncStream<Void>.makeStream()
        running = Task {
            start.finish()
            await client.run()
        }
        for await _ in started {}
    }

    /// Creates an empty database with a random name beside the one the URL names.
    func createDatabase() async throws -> Database {
        let name = "herald_bench_" + String(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12))
        _ = try await client.query("CREATE DATABASE \(unescaped: name)")
        guard var components = URLComponents(string: url) else { throw PostgresURLUnusable(url: url) }
        components.path = "/" + name
        guard let databaseURL = components.string else { throw PostgresURLUnusable(url: url) }
        return Database(name: name, url: databaseURL)
    }

    /// Drops a database the benchmark created, closing any connection still open to it (PostgreSQL 13 and later; a
    /// plain `DROP DATABASE` before that).
    func dropDatabase(_ name: String) async throws {
        do {
            _ = try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
        } catch {
            _ = try await client.query("DROP DATABASE IF EXISTS \(unescaped: name)")
        }
    }

    /// Runs `ANALYZE` in `database`, as autovacuum does on a database in service: the statistics of a database the
    /// benchmark created a minute ago describe empty tables, and a prepared statement's generic plan made from them
    /// (hash-joining every leased notification, say) stays until they change. `ANALYZE` invalidates those plans.
    func analyze(_ database: Database) async throws {
        let client = PostgresClient(configuration: try PostgresURL(database.url).clientConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            _ = try await client.query("ANALYZE")
            group.cancelAll()
        }
    }

    /// The server's processes now, those connected to `database` apart.
    func processes(database: String) async throws -> Processes {
        let rows = try await client.query(
            """
            SELECT pid, coalesce(datname::text, ''), coalesce(backend_type, ''), pid = pg_backend_pid()
            FROM pg_stat_activity
            """)
        var processes = Processes()
        var postmaster: Int32?
        for try await (pid, datname, backendType, isOwn) in rows.decode((Int32, String, String, Bool).self) {
            // Only processes of this machine that are PostgreSQL's (a server elsewhere, or in a container with
            // its own process ids, is not counted).
            guard ProcessStats.command(of: pid) == "postgres" else { continue }
            postmaster = postmaster ?? ProcessStats.parentPID(of: pid)
            if isOwn { continue }
            if datname == database {
                processes.database.insert(pid)
            } else if datname.isEmpty || backendType != "client backend" {
                // Background processes; autovacuum workers and parallel workers carry a database name, so one
                // working on another database is counted as shared here.
                processes.shared.insert(pid)
            } else {
                processes.others.insert(pid)
            }
        }
        if let postmaster, ProcessStats.command(of: postmaster) == "postgres" { processes.shared.insert(postmaster) }
        return processes
    }

    func shutdown() async {
        running.cancel()
        await running.value
    }
}

struct PostgresURLUnusable: Error, CustomStringConvertible {
    var url: String
    var description: String { "cannot name a database beside the one in \(PostgresURL.redacted(url))" }
}

/// The CPU time a set of processes used over a measurement window (user + system, from `/proc/PID/stat`). A process
/// that is gone at the end of the window (or was not there at its start) is not counted; ``lost`` says how many.
final class ProcessSetCPU: WindowObserver {
    let pids: Set<Int32>
    private let state = Mutex<(start: [Int32: Double], end: [Int32: Double], startAt: ContinuousClock.Instant?, endAt: ContinuousClock.Instant?)>(
        ([:], [:], nil, nil))

    init(_ pids: some Sequence<Int32>) { self.pids = Set(pids) }

    func windowStarted() {
        let times = read()
        state.withLock {
            $0.start = times
            $0.startAt = .now
        }
    }

    func windowEnded() {
        let times = read()
        state.withLock {
            $0.end = times
            $0.endAt = .now
        }
    }

    private func read() -> [Int32: Double] {
        var times: [Int32: Double] = [:]
        for pid in pids { times[pid] = ProcessStats.cpuSeconds(of: pid) }
        return times
    }

    /// CPU seconds over the window, all processes together.
    var seconds: Double? {
        state.withLock { state in
            guard state.startAt != nil, state.endAt != nil else { return nil }
            return state.start.reduce(0) { sum, entry in sum + (state.end[entry.key].map { $0 - entry.value } ?? 0) }
        }
    }

    /// Processes whose CPU time could not be read at both ends of the window.
    var lost: Int {
        state.withLock { state in pids.count { state.start[$0] == nil || state.end[$0] == nil } }
    }

    /// Cores used on average over the window.
    var cores: Double? {
        guard let seconds, let window = state.withLock({ state in state.startAt.flatMap { start in state.endAt.map { $0 - start } } })
        else { return nil }
        return seconds / window.seconds
    }

    func milliseconds(per count: Int) -> Double? {
        guard count > 0, let seconds else { return nil }
        return seconds * 1_000 / Double(count)
    }
}

extension ProcessStats {
    /// The command name (`/proc/PID/comm`: the executable's name, which a PostgreSQL backend keeps when it sets its
    /// process title).
    static func command(of pid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The parent process id (field 4 of `/proc/PID/stat`).
    static func parentPID(of pid: Int32) -> Int32? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}
