import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func insertAPIToken(_ token: APIToken, maximumActive: Int) async throws -> APITokenInsertOutcome {
        try await write { db in
            let deviceID = token.deviceID.databaseString
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [deviceID]) != nil else {
                throw StoreError.notFound("device")
            }
            if !token.isRevoked {
                let taken = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM api_token WHERE device_id = ? AND name = ? AND revoked_at IS NULL",
                    arguments: [deviceID, token.name])
                if taken != nil { return .nameTaken }
                let active = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM api_token WHERE device_id = ? AND revoked_at IS NULL", arguments: [deviceID]) ?? 0
                if active >= maximumActive { return .limitReached }
            }
            try db.execute(
                sql: """
                    INSERT INTO api_token (id, device_id, name, token_hash, created_at, last_used_at, revoked_at, scopes, slugs)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    token.id.databaseString, deviceID, token.name, token.tokenHash, token.createdAt.timeIntervalSince1970,
                    token.lastUsedAt?.timeIntervalSince1970, token.revokedAt?.timeIntervalSince1970, token.grants.storedScopes,
                    token.grants.storedSlugs,
                ])
            return .inserted
        }
    }

    /// Kept for a moment (``APITokenCache``): a revocation here is seen at once, one by another process within its
    /// time to live.
    public func apiToken(tokenHash: String) async throws -> APIToken? {
        if let cached = apiTokenCache.token(hash: tokenHash) { return cached }
        let generation = apiTokenCache.generation
        let token = try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM api_token WHERE token_hash = ?"), arguments: [tokenHash])
                .map(Self.apiToken)
        }
        if let token { apiTokenCache.remember(token, readSince: generation) }
        return token
    }

    public func apiTokens(deviceID: Device.ID) async throws -> [APIToken] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM api_token WHERE device_id = ? ORDER BY created_at, id",
                arguments: [deviceID.databaseString]
            ).map(Self.apiToken)
        }
    }

    public func revokeAPIToken(_ selector: APITokenSelector, deviceID: Device.ID, at date: Date) async throws -> APIToken? {
        defer { apiTokenCache.forgetAll() }  // after the write (a lookup that read before it cannot put the token back)
        return try await write { db in
            let (column, value): (String, String) =
                switch selector {
                case .id(let id): ("id", id.databaseString)
                case .name(let name): ("name", name)
                }
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM api_token WHERE device_id = ? AND \(column) = ? AND revoked_at IS NULL",
                    arguments: [deviceID.databaseString, value])
            else { return nil }
            var token = try Self.apiToken(row)
            token.revokedAt = date
            try db.execute(
                sql: "UPDATE api_token SET revoked_at = ? WHERE id = ?",
                arguments: [date.timeIntervalSince1970, token.id.databaseString])
            return token
        }
    }

    public func touchAPIToken(id: APIToken.ID, at date: Date) async throws {
        defer { apiTokenCache.forget(id: id) }
        try await write { db in
            try db.cachedStatement(sql: "UPDATE api_token SET last_used_at = ? WHERE id = ?")
                .execute(arguments: [date.timeIntervalSince1970, id.databaseString])
        }
    }

    private static func apiToken(_ row: Row) throws -> APIToken {
        func uuid(_ text: String) throws -> UUID {
            guard let id = UUID(uuidString: text) else { throw CorruptAPITokenRow(detail: "bad id \(text)") }
            return id
        }
        let lastUsed: Double? = row["last_used_at"]
        let revoked: Double? = row["revoked_at"]
        return APIToken(
            id: try uuid(row["id"]), deviceID: try uuid(row["device_id"]), name: row["name"], tokenHash: row["token_hash"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]), lastUsedAt: lastUsed.map(Date.init(timeIntervalSince1970:)),
            revokedAt: revoked.map(Date.init(timeIntervalSince1970:)),
            grants: APITokenGrants(storedScopes: row["scopes"], storedSlugs: row["slugs"]))
    }
}

private struct CorruptAPITokenRow: Error {
    var detail: String
}
