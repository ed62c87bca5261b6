import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    /// Locks the device's row first (`FOR NO KEY UPDATE`, which notifications being stored for it do not wait for):
    /// concurrent inserts for one device, from any instance, queue there, so the name and count checks hold.
    public func insertAPIToken(_ token: APIToken, maximumActive: Int) async throws -> APITokenInsertOutcome {
        try await transaction { [self] connection in
            let device = try await execute("SELECT 1 FROM device WHERE id = \(token.deviceID) FOR NO KEY UPDATE", on: connection)
            guard !device.isEmpty else { throw StoreError.notFound("device") }
            if !token.isRevoked {
                let active = try await execute(
                    """
                    SELECT count(*), count(*) FILTER (WHERE name = \(token.name)) FROM api_token
                    WHERE device_id = \(token.deviceID) AND revoked_at IS NULL
                    """, on: connection)
                let (count, named) = try active.first?.decode((Int, Int).self) ?? (0, 0)
                if named > 0 { return .nameTaken }
                if count >= maximumActive { return .limitReached }
            }
            try await execute(
                """
                INSERT INTO api_token (id, device_id, name, token_hash, created_at, last_used_at, revoked_at, scopes, slugs)
                VALUES (\(token.id), \(token.deviceID), \(token.name), \(token.tokenHash), \(token.createdAt.timeIntervalSince1970),
                    \(token.lastUsedAt?.timeIntervalSince1970), \(token.revokedAt?.timeIntervalSince1970), \(token.grants.storedScopes),
                    \(token.grants.storedSlugs))
                """, on: connection)
            return .inserted
        }
    }

    public func apiToken(tokenHash: String) async throws -> APIToken? {
        try await read("SELECT \(unescaped: Self.apiTokenColumns) FROM api_token WHERE token_hash = \(tokenHash)").first.map(Self.apiToken)
    }

    public func apiTokens(deviceID: Device.ID) async throws -> [APIToken] {
        try await read(
            "SELECT \(unescaped: Self.apiTokenColumns) FROM api_token WHERE device_id = \(deviceID) ORDER BY created_at, id"
        ).map(Self.apiToken)
    }

    public func revokeAPIToken(_ selector: APITokenSelector, deviceID: Device.ID, at date: Date) async throws -> APIToken? {
        let (column, value): (String, any PostgresThrowingDynamicTypeEncodable) =
            switch selector {
            case .id(let id): ("id", id)
            case .name(let name): ("name", name)
            }
        let revoke = PostgresQuery(
            unsafeSQL: """
                UPDATE api_token SET revoked_at = $1
                WHERE device_id = $2 AND \(column) = $3 AND revoked_at IS NULL
                RETURNING \(Self.apiTokenColumns)
                """, binds: try PostgresBindings(binding: [date.timeIntervalSince1970, deviceID, value]))
        return try await write(revoke).first.map(Self.apiToken)
    }

    public func touchAPIToken(id: APIToken.ID, at date: Date) async throws {
        try await write("UPDATE api_token SET last_used_at = \(date.timeIntervalSince1970) WHERE id = \(id)")
    }

    // MARK: Rows

    private static let apiTokenColumns = "id, device_id, name, token_hash, created_at, last_used_at, revoked_at, scopes, slugs"

    private static func apiToken(_ row: PostgresRow) throws -> APIToken {
        let row = row.makeRandomAccess()
        return APIToken(
            id: try row.value("id"), deviceID: try row.value("device_id"), name: try row.value("name"),
            tokenHash: try row.value("token_hash"), createdAt: try row.date("created_at"),
            lastUsedAt: try row.optionalDate("last_used_at"), revokedAt: try row.optionalDate("revoked_at"),
            grants: APITokenGrants(storedScopes: try row.value("scopes"), storedSlugs: try row.value("slugs")))
    }
}
