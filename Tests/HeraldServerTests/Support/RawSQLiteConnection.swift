import GRDBSQLite

/// A connection of the test's own to Herald's SQLite file, through SQLite's C API (GRDB refuses to leave a
/// transaction open between two accesses, and holding the write lock is the point).
final class RawSQLiteConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var handle: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            throw Failure(description: "cannot open \(path)")
        }
        sqlite3_busy_timeout(handle, 10_000)
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw Failure(description: String(cString: sqlite3_errmsg(handle))) }
    }

    /// The first column of the first row, as text.
    func text(_ sql: String) throws -> String? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw Failure(description: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
        return String(cString: text)
    }

    func close() {
        sqlite3_close_v2(handle)
        handle = nil
    }
}
