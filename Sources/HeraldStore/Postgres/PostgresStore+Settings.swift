import HeraldCore
import PostgresNIO

extension PostgresStore {
    /// `INSERT … ON CONFLICT DO NOTHING`, then read: instances starting together on one database all get the value
    /// that was stored first.
    public func setting(named name: String, insertingIfAbsent value: String) async throws -> String {
        try await write("INSERT INTO server_setting (name, value) VALUES (\(name), \(value)) ON CONFLICT (name) DO NOTHING")
        return try await setting(named: name) ?? value
    }

    public func setting(named name: String) async throws -> String? {
        try await read("SELECT value FROM server_setting WHERE name = \(name)").first?.decode(String.self)
    }
}
