import Foundation
import HeraldCore

extension InMemoryStore {
    public func insertAPIToken(_ token: APIToken, maximumActive: Int) async throws -> APITokenInsertOutcome {
        try await purgeOrphanedAPITokens()
        guard try await device(id: token.deviceID) != nil else { throw StoreError.notFound("device") }
        let active = apiTokens.values.filter { $0.deviceID == token.deviceID && !$0.isRevoked }
        if !token.isRevoked {
            if active.contains(where: { $0.name == token.name }) { return .nameTaken }
            if active.count >= maximumActive { return .limitReached }
        }
        apiTokens[token.id] = token
        return .inserted
    }

    public func apiToken(tokenHash: String) async throws -> APIToken? {
        guard let token = apiTokens.values.first(where: { $0.tokenHash == tokenHash }),
            try await device(id: token.deviceID) != nil
        else { return nil }
        return token
    }

    public func apiTokens(deviceID: Device.ID) async throws -> [APIToken] {
        guard try await device(id: deviceID) != nil else { return [] }
        return apiTokens.values.filter { $0.deviceID == deviceID }
            .sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
    }

    public func revokeAPIToken(_ selector: APITokenSelector, deviceID: Device.ID, at date: Date) async throws -> APIToken? {
        guard try await device(id: deviceID) != nil else { return nil }
        let match = apiTokens.values.first { token in
            guard token.deviceID == deviceID, !token.isRevoked else { return false }
            switch selector {
            case .id(let id): return token.id == id
            case .name(let name): return token.name == name
            }
        }
        guard var token = match else { return nil }
        token.revokedAt = date
        apiTokens[token.id] = token
        return token
    }

    public func touchAPIToken(id: APIToken.ID, at date: Date) async throws {
        apiTokens[id]?.lastUsedAt = date
    }

    /// Drops the tokens of devices that were deleted (the SQLite store cascades; this store catches up here).
    private func purgeOrphanedAPITokens() async throws {
        var orphaned: [APIToken.ID] = []
        for (id, token) in apiTokens where try await device(id: token.deviceID) == nil { orphaned.append(id) }
        for id in orphaned { apiTokens[id] = nil }
    }
}
