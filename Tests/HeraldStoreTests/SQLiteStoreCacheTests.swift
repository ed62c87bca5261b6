import Foundation
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldStore

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// The SQLite store's two caches on the PATCH path (issue 38): activity rows as the writer last read or wrote them
/// (``ActivityRowCache``) and API tokens by hash (``APITokenCache``). What they must never do: let a change decide on a
/// row that is not there any more and write it, or let a revoked token in.
@Suite("SQLite store: the row and token caches")
struct SQLiteStoreCacheTests {
    static func path() throws -> String { try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path }

    /// A device with the activity "oven" (its `version` counts the changes), stored through `store`.
    static func oven(in store: SQLiteStore) async throws -> Device {
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let record = ActivityRecord(
            deviceID: device.id, slug: "oven", state: "ongoing", priority: 0, createdAt: start.addingTimeInterval(0.1),
            updatedAt: start.addingTimeInterval(0.3), document: Data(#"{"slug":"oven"}"#.utf8), extras: Data("{}".utf8), version: 1,
            pushDueAt: start.addingTimeInterval(0.7))
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: [record]), ()) }
        return device
    }

    /// The versions each try of a change decided on.
    final class Tries: Sendable {
        let versions = Mutex<[Int]>([])
        var seen: [Int] { versions.withLock { $0 } }
    }

    /// Adds one to the row's version; `seen` records the version each try decided on.
    static func bump(_ store: SQLiteStore, _ device: Device, seen: Tries? = nil) async throws -> Int {
        try await store.changeActivityRecord(deviceID: device.id, slug: "oven", decideInWriter: false) { read in
            guard var record = read else { return (ActivityWrites(), 0) }
            seen?.versions.withLock { $0.append(record.version) }
            record.version += 1
            record.updatedAt = record.updatedAt.addingTimeInterval(0.123_456_789)  // a date that does not round-trip exactly
            record.lease = Lease(owner: "herald-a", expiresAt: start.addingTimeInterval(30.000_000_1))
            return (ActivityWrites(upserts: [record]), record.version)
        }
    }

    @Test func aWrittenRowIsKeptAsAReadReturnsItSoTheNextChangeDecidesOnItWithoutReading() async throws {
        let store = try SQLiteStore(path: Self.path())
        let device = try await Self.oven(in: store)
        #expect(try await Self.bump(store, device) == 2)
        let kept = try #require(store.activityRows.record(deviceID: device.id, slug: "oven"))
        let read = try #require(try await store.activity(deviceID: device.id, slug: "oven"))
        #expect(kept == read, "the kept row compares equal to the row read: a change's first try is not wasted")
        let seen = Tries()
        #expect(try await Self.bump(store, device, seen: seen) == 3)
        #expect(seen.seen == [2], "one try, on the kept row")
        try await store.close()
    }

    @Test func aRowChangedByAnotherWriterIsReadAgainAndNoUpdateIsLost() async throws {
        let path = try Self.path()
        let first = try SQLiteStore(path: path)
        let device = try await Self.oven(in: first)
        #expect(try await Self.bump(first, device) == 2)  // `first` keeps version 2
        // Another process on the same file (as `herald` commands are) changes the row twice.
        let second = try SQLiteStore(path: path)
        #expect(try await Self.bump(second, device) == 3)
        #expect(try await Self.bump(second, device) == 4)
        let seen = Tries()
        #expect(try await Self.bump(first, device, seen: seen) == 5, "decided again on the row as it is")
        #expect(seen.seen == [2, 4], "the kept row first, refused by the write's check, then the row read")
        #expect(try await first.activity(deviceID: device.id, slug: "oven")?.version == 5)
        try await second.close()
        try await first.close()
    }

    @Test func aDecisionThatWritesNothingIsMadeAgainOnTheRowRead() async throws {
        let path = try Self.path()
        let first = try SQLiteStore(path: path)
        let device = try await Self.oven(in: first)
        #expect(try await Self.bump(first, device) == 2)
        let second = try SQLiteStore(path: path)
        #expect(try await Self.bump(second, device) == 3)
        // "Nothing to do unless the row is past version 2": on the kept row (version 2) that would answer wrongly.
        let answer = try await first.changeActivityRecord(deviceID: device.id, slug: "oven", decideInWriter: false) { read in
            (ActivityWrites(), read?.version ?? 0)
        }
        #expect(answer == 3)
        try await second.close()
        try await first.close()
    }

    @Test func deletionsClaimsAndLeaseReleasesKeepTheCacheTrue() async throws {
        let store = try SQLiteStore(path: Self.path())
        let device = try await Self.oven(in: store)
        #expect(try await Self.bump(store, device) == 2)
        let lease = Lease(owner: "herald-b", expiresAt: start.addingTimeInterval(3_600.000_000_3))
        let held = try await store.claimDueActivities(at: start.addingTimeInterval(29), lease: lease, limit: 5)
        #expect(held.isEmpty, "held by the bump's lease until start + 30")
        let later = try await store.claimDueActivities(at: start.addingTimeInterval(31), lease: lease, limit: 5)
        #expect(later.map(\.slug) == ["oven"])
        let afterClaim = try await store.activity(deviceID: device.id, slug: "oven")
        #expect(store.activityRows.record(deviceID: device.id, slug: "oven") == afterClaim, "the claim's lease is in the kept row")
        try await store.releaseActivityLeases(owner: "herald-b")
        #expect(store.activityRows.count == 0)
        #expect(try await Self.bump(store, device) == 3)
        try await store.changeActivityRecord(deviceID: device.id, slug: "oven", decideInWriter: true) { _ in
            (ActivityWrites(deletions: ["oven"]), ())
        }
        #expect(store.activityRows.record(deviceID: device.id, slug: "oven") == nil)
        #expect(try await Self.bump(store, device) == 0, "gone: the change finds no row")
        try await store.close()
    }

    @Test func theRowCacheStaysWithinItsBytesAndKeepsNoLargeRowOrRowReadWithoutExtras() {
        let cache = ActivityRowCache(capacityBytes: 10_000, largestRowBytes: 2_000)
        func row(_ slug: String, bytes: Int, extrasRead: Bool = true) -> ActivityRecord {
            ActivityRecord(
                deviceID: UUID(), slug: slug, state: "ongoing", priority: 0, createdAt: start, updatedAt: start,
                document: Data(repeating: 0x20, count: bytes), extras: nil, extrasRead: extrasRead)
        }
        let large = row("large", bytes: 2_000)
        cache.remember(large)
        #expect(cache.record(deviceID: large.deviceID, slug: "large") == nil)
        let partial = row("partial", bytes: 10, extrasRead: false)
        cache.remember(partial)
        #expect(cache.record(deviceID: partial.deviceID, slug: "partial") == nil)
        for index in 0..<1_000 { cache.remember(row("r\(index)", bytes: 1_000)) }
        #expect(cache.count <= 10_000 / 1_256 && cache.count > 0)
        let kept = row("kept", bytes: 100)
        cache.remember(kept)
        #expect(cache.record(deviceID: kept.deviceID, slug: "kept") == kept)
        cache.forget(deviceID: kept.deviceID, slug: "kept")
        #expect(cache.record(deviceID: kept.deviceID, slug: "kept") == nil)
        cache.forgetAll()
        #expect(cache.count == 0)
    }
}

/// The API token cache: a token revoked through the store is refused at the next lookup; one revoked by another
/// process on the same file within the cache's time to live (2 s).
@Suite("SQLite store: API tokens kept for a moment")
struct SQLiteAPITokenCacheTests {
    static func token(for device: Device, name: String) -> APIToken {
        APIToken(deviceID: device.id, name: name, tokenHash: Secrets.hash("secret-\(name)-\(UUID())"), createdAt: start)
    }

    @Test func aRevocationOrADeletionThroughTheStoreIsSeenAtTheNextLookup() async throws {
        let store = try SQLiteStore(path: SQLiteStoreCacheTests.path())
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = Self.token(for: device, name: "ci")
        #expect(try await store.insertAPIToken(token, maximumActive: 5) == .inserted)
        #expect(try await store.apiToken(tokenHash: token.tokenHash)?.isRevoked == false)
        #expect(store.apiTokenCache.token(hash: token.tokenHash) != nil, "kept after the lookup")
        _ = try await store.revokeAPIToken(.id(token.id), deviceID: device.id, at: start)
        #expect(try await store.apiToken(tokenHash: token.tokenHash)?.isRevoked == true)
        let other = Self.token(for: device, name: "deploy")
        #expect(try await store.insertAPIToken(other, maximumActive: 5) == .inserted)
        #expect(try await store.apiToken(tokenHash: other.tokenHash) != nil)
        try await store.touchAPIToken(id: other.id, at: start.addingTimeInterval(60))
        #expect(try await store.apiToken(tokenHash: other.tokenHash)?.lastUsedAt == start.addingTimeInterval(60), "its last use read again")
        try await store.deleteDevice(id: device.id)
        #expect(try await store.apiToken(tokenHash: other.tokenHash) == nil, "gone with its device")
        try await store.close()
    }

    @Test func aRevocationByAnotherProcessIsSeenOnceTheTimeToLiveHasPassed() async throws {
        let path = try SQLiteStoreCacheTests.path()
        let server = try SQLiteStore(path: path)
        let device = Fixtures.device().device
        try await server.insertDevice(device)
        let token = Self.token(for: device, name: "ci")
        #expect(try await server.insertAPIToken(token, maximumActive: 5) == .inserted)
        #expect(try await server.apiToken(tokenHash: token.tokenHash)?.isRevoked == false)
        let command = try SQLiteStore(path: path)  // `herald token revoke`
        _ = try await command.revokeAPIToken(.id(token.id), deviceID: device.id, at: start)
        try await command.close()
        try await Task.sleep(for: server.apiTokenCache.timeToLive + .milliseconds(50))
        #expect(try await server.apiToken(tokenHash: token.tokenHash)?.isRevoked == true)
        try await server.close()
    }

    @Test func aLookupThatReadBeforeAWriteDoesNotPutTheOldTokenBack() {
        let cache = APITokenCache(capacity: 3)
        let device = Fixtures.device().device
        let token = Self.token(for: device, name: "ci")
        let generation = cache.generation
        cache.forgetAll()  // a write happened while the lookup read
        cache.remember(token, readSince: generation)
        #expect(cache.token(hash: token.tokenHash) == nil)
        cache.remember(token, readSince: cache.generation)
        #expect(cache.token(hash: token.tokenHash) == token)
        for index in 0..<10 { cache.remember(Self.token(for: device, name: "t\(index)"), readSince: cache.generation) }
        #expect(cache.count <= 3)
        let expired = APITokenCache(timeToLive: .zero)
        expired.remember(token, readSince: expired.generation)
        #expect(expired.token(hash: token.tokenHash) == nil)
    }
}
