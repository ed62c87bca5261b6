import Foundation
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// Checkpoints of the write-ahead log, off the commit path.
///
/// By default SQLite checkpoints inside the commit that takes the log past 1,000 pages: that commit, and every
/// request whose notification is in its batch, waits for the page copies and two more `fsync`s (3–7 ms of p99 at
/// 1,000 requests/s, docs/performance.md). Here the pool's connections only report the log's size after each commit
/// (`sqlite3_wal_hook`, which also turns SQLite's own automatic checkpoint off on them), and a connection of its own
/// runs the checkpoint while commits go on. The checkpoint is `PASSIVE`: it never waits for the writer or the
/// readers, and copies what they leave it. It changes nothing about durability: a commit is durable once its frames
/// are in the log, before any checkpoint.
///
/// It runs from 10,000 pages of log by default (about 40 MB, `SQLiteStore.defaultCheckpointPages`), not SQLite's
/// 1,000: a page that every commit rewrites (the right edge of an index) is copied once per checkpoint, so fewer,
/// larger checkpoints copy and sync less (at 1,000 notifications/s: 8 % fewer page writes, a fifth of the log reads;
/// docs/performance.md, "Outcomes ride along").
final class WALCheckpointer: Sendable {
    /// Log size (pages) from which a checkpoint runs.
    private let threshold: CInt

    private struct State {
        var connection: DatabaseQueue?
        var isRunning = false
        /// A commit left the log above the threshold while a checkpoint ran: run another when it ends.
        var isRequested = false
        var completed = 0
        var isClosed = false
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(threshold: Int, logger: Logger) {
        precondition(threshold > 0, "a checkpoint threshold is at least one page")
        self.threshold = CInt(clamping: threshold)
        self.logger = logger
    }

    /// Checkpoints that ran to the end so far (tests read it).
    var completedCheckpoints: Int { state.withLock { $0.completed } }

    /// Opens the checkpointer's own connection to the database at `path` (once the pool has created and migrated it).
    func open(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "herald.checkpoint"
        configuration.prepareDatabase { db in
            // The checkpoint syncs the log before it copies, and the database file after: as the writer does.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        state.withLock { $0.connection = connection }
    }

    /// Reports the log's size to this checkpointer after every commit on `db` (a connection of the pool).
    func watch(_ db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                if frames >= checkpointer.threshold { checkpointer.request() }
                return SQLITE_OK
            }, context)
    }

    /// Called on the writer's thread after a commit that left the log at the threshold or above.
    private func request() {
        let connection = state.withLock { state -> DatabaseQueue? in
            guard let connection = state.connection, !state.isClosed else { return nil }
            if state.isRunning {
                state.isRequested = true
                return nil
            }
            state.isRunning = true
            return connection
        }
        if let connection { run(on: connection) }
    }

    private func run(on connection: DatabaseQueue) {
        connection.asyncWriteWithoutTransaction { [self] db in
            var succeeded = false
            do {
                try db.checkpoint(.passive)
                succeeded = true
            } catch {
                // Busy (another process checkpoints the same file) or a failing disk, which the next commit reports.
                logger.debug("A WAL checkpoint did not run", metadata: ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                if succeeded { state.completed += 1 }
                guard state.isRequested, !state.isClosed else {
                    state.isRunning = false
                    return false
                }
                state.isRequested = false
                return true
            }
            if again { run(on: connection) }
        }
    }

    /// Lets a running checkpoint end, starts no other, and closes the connection.
    func close() throws {
        let connection = state.withLock { state -> DatabaseQueue? in
            state.isClosed = true
            defer { state.connection = nil }
            return state.connection
        }
        // Runs after the checkpoint already queued on the connection's serial queue, if any.
        connection?.writeWithoutTransaction { _ in }
        try connection?.close()
    }
}
