import GRDB
import HeraldCore

extension SQLiteStore {
    /// `INSERT OR IGNORE`, then read back, in one transaction: the first value stored stays.
    public func setting(named name: String, insertingIfAbsent value: String) async throws -> String {
        try await write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO server_setting (name, value) VALUES (?, ?)", arguments: [name, value])
            return try String.fetchOne(db, sql: "SELECT value FROM server_setting WHERE name = ?", arguments: [name]) ?? value
        }
    }

    public func setting(named name: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM server_setting WHERE name = ?", arguments: [name])
        }
    }
}
