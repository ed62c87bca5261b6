import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

private func token(for device: Device, name: String, at date: Date = start) -> (token: APIToken, secret: String) {
    let secret = "hrd_" + Secrets.random256BitHex()
    return (APIToken(deviceID: device.id, name: name, tokenHash: Secrets.hash(secret), createdAt: date), secret)
}

@Suite("API token store contract")
struct APITokenStoreContractTests {
    @Test(arguments: Backend.available)
    func insertsAndFindsTokensByHash(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let (first, secret) = token(for: device, name: "Home Assistant")
        #expect(try await store.insertAPIToken(first, maximumActive: 5) == .inserted)
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret)) == first)
        #expect(try await store.apiToken(tokenHash: Secrets.hash("hrd_" + Secrets.random256BitHex())) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func keepsATokensScopesAndSlugs(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var (scoped, secret) = token(for: device, name: "oven")
        scoped.grants = try APITokenGrants(scopes: ["activity:update"], slugs: ["oven", "printer-*"])
        #expect(try await store.insertAPIToken(scoped, maximumActive: 5) == .inserted)
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret))?.grants == scoped.grants)
        #expect(try await store.apiTokens(deviceID: device.id).map(\.grants) == [scoped.grants])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func keepsADevicesPushToStartToken(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        var device = Fixtures.device().device
        device.pushToStartToken = Fixtures.apnsToken(7)
        try await store.insertDevice(device)
        #expect(try await store.device(id: device.id)?.pushToStartToken == Fixtures.apnsToken(7))
        device.pushToStartToken = nil
        try await store.updateDevice(device)
        #expect(try await store.device(id: device.id)?.pushToStartToken == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func namesAreUniqueAmongTheDevicesActiveTokens(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let other = Fixtures.device(token: Fixtures.apnsToken(2)).device
        try await store.insertDevice(device)
        try await store.insertDevice(other)
        let first = token(for: device, name: "ci").token
        #expect(try await store.insertAPIToken(first, maximumActive: 5) == .inserted)
        #expect(try await store.insertAPIToken(token(for: device, name: "ci").token, maximumActive: 5) == .nameTaken)
        #expect(try await store.insertAPIToken(token(for: device, name: "CI").token, maximumActive: 5) == .inserted)
        #expect(try await store.insertAPIToken(token(for: other, name: "ci").token, maximumActive: 5) == .inserted)

        // Once revoked, the name is free again.
        _ = try await store.revokeAPIToken(.id(first.id), deviceID: device.id, at: start)
        #expect(try await store.insertAPIToken(token(for: device, name: "ci").token, maximumActive: 5) == .inserted)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func refusesMoreThanTheMaximumOfActiveTokens(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let first = token(for: device, name: "1").token
        #expect(try await store.insertAPIToken(first, maximumActive: 2) == .inserted)
        #expect(try await store.insertAPIToken(token(for: device, name: "2").token, maximumActive: 2) == .inserted)
        #expect(try await store.insertAPIToken(token(for: device, name: "3").token, maximumActive: 2) == .limitReached)
        _ = try await store.revokeAPIToken(.name("1"), deviceID: device.id, at: start)
        #expect(try await store.insertAPIToken(token(for: device, name: "3").token, maximumActive: 2) == .inserted)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func listsADevicesTokensOldestFirstIncludingRevokedOnes(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let other = Fixtures.device(token: Fixtures.apnsToken(2)).device
        try await store.insertDevice(device)
        try await store.insertDevice(other)
        let later = token(for: device, name: "later", at: start.addingTimeInterval(5)).token
        let earlier = token(for: device, name: "earlier", at: start).token
        let foreign = token(for: other, name: "foreign").token
        for token in [later, earlier, foreign] { _ = try await store.insertAPIToken(token, maximumActive: 5) }
        let revoked = try #require(try await store.revokeAPIToken(.name("later"), deviceID: device.id, at: start.addingTimeInterval(9)))
        #expect(revoked.revokedAt == start.addingTimeInterval(9))
        #expect(try await store.apiTokens(deviceID: device.id) == [earlier, revoked])
        #expect(try await store.apiTokens(deviceID: other.id) == [foreign])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func revokesByIDOrNameOnlyTheDevicesActiveToken(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let other = Fixtures.device(token: Fixtures.apnsToken(2)).device
        try await store.insertDevice(device)
        try await store.insertDevice(other)
        let (byID, secret) = token(for: device, name: "by id")
        let byName = token(for: device, name: "by name").token
        _ = try await store.insertAPIToken(byID, maximumActive: 5)
        _ = try await store.insertAPIToken(byName, maximumActive: 5)

        // Another device cannot revoke it.
        #expect(try await store.revokeAPIToken(.id(byID.id), deviceID: other.id, at: start) == nil)
        #expect(try await store.revokeAPIToken(.name("by name"), deviceID: other.id, at: start) == nil)

        let revoked = try #require(try await store.revokeAPIToken(.id(byID.id), deviceID: device.id, at: start))
        #expect(revoked.id == byID.id && revoked.isRevoked)
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret))?.revokedAt == start)
        // Revoking twice finds nothing the second time.
        #expect(try await store.revokeAPIToken(.id(byID.id), deviceID: device.id, at: start) == nil)

        #expect(try await store.revokeAPIToken(.name("by name"), deviceID: device.id, at: start)?.id == byName.id)
        #expect(try await store.revokeAPIToken(.name("unknown"), deviceID: device.id, at: start) == nil)
        #expect(try await store.revokeAPIToken(.id(UUID()), deviceID: device.id, at: start) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func touchingRecordsTheLastUse(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let (stored, secret) = token(for: device, name: "ci")
        _ = try await store.insertAPIToken(stored, maximumActive: 5)
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret))?.lastUsedAt == nil)
        try await store.touchAPIToken(id: stored.id, at: start.addingTimeInterval(30))
        try await store.touchAPIToken(id: stored.id, at: start.addingTimeInterval(60))
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret))?.lastUsedAt == start.addingTimeInterval(60))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deletingADeviceRemovesItsTokens(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let (stored, secret) = token(for: device, name: "ci")
        _ = try await store.insertAPIToken(stored, maximumActive: 5)
        try await store.deleteDevice(id: device.id)
        #expect(try await store.apiToken(tokenHash: Secrets.hash(secret)) == nil)
        #expect(try await store.apiTokens(deviceID: device.id).isEmpty)
        try await store.close()
    }
}

@Suite("SQLite API tokens")
struct SQLiteAPITokenTests {
    @Test func tokensSurviveReopeningAndOnlyTheirHashIsStored() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let (stored, secret) = token(for: device, name: "ci")
        _ = try await store.insertAPIToken(stored, maximumActive: 5)
        try await store.touchAPIToken(id: stored.id, at: start.addingTimeInterval(1))
        try await store.close()

        let reopened = try SQLiteStore(path: path)
        var expected = stored
        expected.lastUsedAt = start.addingTimeInterval(1)
        #expect(try await reopened.apiToken(tokenHash: Secrets.hash(secret)) == expected)
        try await reopened.close()
        let database = try String(contentsOfFile: path, encoding: .isoLatin1)
            + ((try? String(contentsOfFile: path + "-wal", encoding: .isoLatin1)) ?? "")
        #expect(!database.contains(secret))
    }
}
