import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// Statements whose cost must not grow with the number of devices, checked by SQLite's own query plan.
@Suite("SQLite query plans")
struct SQLiteQueryPlanTests {
    /// The unpark runs at every start and holds the writer while it runs. On a store of a million devices the
    /// earlier form listed every device first (`LIST SUBQUERY` over `device_platform_token`): 7 seconds in which no
    /// notification could be accepted.
    @Test func unparkingWalksTheParkedNotificationsAndLooksEachDeviceUpByItsKey() async throws {
        let store = try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path)
        let plan = try await store.database.read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.unparkStatement(platformCount: 2),
                arguments: [0, "apns", "fcm"]
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains("SCAN notification USING INDEX notification_parked"), "\(plan)")
        let deviceSteps = plan.filter { $0.contains(" device ") || $0.hasSuffix(" device") }
        #expect(!deviceSteps.isEmpty, "\(plan)")
        #expect(deviceSteps.allSatisfy { $0.hasPrefix("SEARCH device USING INDEX sqlite_autoindex_device_1 (id=?)") }, "\(plan)")
        #expect(!plan.contains { $0.contains("LIST SUBQUERY") }, "\(plan)")
        try await store.close()
    }

    /// The dashboard lists a device's notifications from an index that delivery outcomes do not rewrite: one keyed
    /// by the device and the last change cost every outcome a delete and an insert at random places in the file.
    @Test func aDevicesNotificationsAreListedFromAnIndexThatOutcomesDoNotRewrite() async throws {
        let store = try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path)
        let (plan, indexedColumns) = try await store.database.read { db in
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.deviceNotificationsStatement, arguments: ["d", 10])
                .map { $0["detail"] as String }
            let indexes = try Row.fetchAll(db, sql: "PRAGMA index_list(notification)").map { $0["name"] as String }
            let columns = try indexes.map { name in
                try Row.fetchAll(db, sql: "PRAGMA index_info(\(name))").compactMap { $0["name"] as String? }
            }
            return (plan, columns)
        }
        // Walked in the index's order; only notifications accepted at the same instant are sorted (by id).
        #expect(
            plan == ["SEARCH notification USING INDEX notification_device_created (device_id=?)", "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"],
            "\(plan)")
        #expect(!indexedColumns.contains { $0.contains("device_id") && $0.contains("updated_at") }, "\(indexedColumns)")
        try await store.close()
    }
}

@Suite("SQLite durability")
struct SQLiteDurabilityTests {
    /// Every commit is synced to the log before the caller is answered (`synchronous = FULL`, 2 in `PRAGMA
    /// synchronous`): a power loss takes nothing that was answered 2xx. GRDB's WAL set-up turns the writer to NORMAL
    /// (1), which syncs only at checkpoints; the store must set FULL after it. Read on the writer, the connection that
    /// commits, also after the file is opened a second time (migrations already done).
    @Test func theWriterSyncsEveryCommit() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        for _ in 0..<2 {
            let store = try SQLiteStore(path: path)
            #expect(try await store.database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 2)
            #expect(try await store.database.write { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
            try await store.close()
        }
    }
}

@Suite("SQLite WAL checkpoints")
struct WALCheckpointTests {
    /// SQLite would checkpoint inside the commit that takes the log past its threshold; Herald's connections hand
    /// that to the checkpointer's own connection instead (`PRAGMA wal_autocheckpoint` reads 0 when another WAL hook
    /// is installed). The threshold is 1,000 pages here (10,000 by default), so that 600 devices cross it.
    @Test func commitsLeaveCheckpointsToTheCheckpointersConnection() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path, checkpointPages: 1_000)
        #expect(try await store.database.write { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") } == 0)
        #expect(try await store.database.read { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") } == 0)
        // One transaction per device, a few pages each: past 1,000 pages of log.
        var devices: [Device] = []
        for number in 0..<600 {
            let device = Fixtures.device(token: Fixtures.apnsToken(number)).device
            try await store.insertDevice(device)
            devices.append(device)
        }
        var turns = 0
        while store.completedCheckpoints == 0, turns < 10_000 {
            try await Task.sleep(for: .milliseconds(1))
            turns += 1
        }
        #expect(store.completedCheckpoints > 0)
        try await store.close()
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.deviceCount() == devices.count)
        #expect(try await reopened.device(id: devices[599].id) == devices[599])
        try await reopened.close()
    }
}

@Suite("Device cache")
struct DeviceCacheTests {
    @Test func aReadThatOverlappedAWriteIsNotRemembered() {
        let cache = DeviceCache()
        var device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        // A read starts (it sees the old token), a write changes the device and invalidates it, the read ends.
        let before = cache.generation
        cache.invalidate(id: device.id)
        cache.remember(device, readSince: before)
        #expect(cache.device(id: device.id) == nil)
        #expect(cache.device(userIDHash: device.userIDHash) == nil)
        // A read that started after the write is kept.
        device.token = Fixtures.apnsToken(2)
        cache.remember(device, readSince: cache.generation)
        #expect(cache.device(id: device.id) == device)
        #expect(cache.device(userIDHash: device.userIDHash) == device)
        cache.forgetAll()
        #expect(cache.device(id: device.id) == nil)
    }
}
