import Foundation
import GRDB
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// The binding model every store keeps: a token may be bound to several devices; writing one device never changes
/// another; a dead token deactivates every device of the platform bound to it. And the device count.
@Suite("Store contract: devices and tokens")
struct DeviceBindingContractTests {
    @Test(arguments: Backend.available)
    func aTokenMayBeBoundToSeveralDevicesAndWritingOneLeavesTheOthers(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let first = Fixtures.device(token: Fixtures.apnsToken(7)).device
        let second = Fixtures.device(token: Fixtures.apnsToken(7)).device
        try await store.insertDevice(first)
        try await store.insertDevice(second)
        #expect(try await store.device(id: first.id) == first)
        #expect(try await store.device(id: second.id) == second)

        var third = Fixtures.device(token: Fixtures.apnsToken(8)).device
        try await store.insertDevice(third)
        third.token = Fixtures.apnsToken(7)
        try await store.updateDevice(third)
        var moved = first
        moved.token = Fixtures.apnsToken(9)
        try await store.updateDevice(moved)
        #expect(try await store.device(id: first.id)?.token == Fixtures.apnsToken(9))
        #expect(try await store.device(id: second.id) == second)
        #expect(try await store.device(id: third.id)?.token == Fixtures.apnsToken(7))
        #expect(try await store.device(id: third.id)?.isActive == true)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aDeadTokenOutcomeDeactivatesEveryDeviceOfThePlatformBoundToIt(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let token = Fixtures.apnsToken(3)
        let used = Fixtures.device(token: token).device
        let sharing = Fixtures.device(token: token).device
        let other = Fixtures.device(token: Fixtures.apnsToken(4)).device
        let fcm = Fixtures.device(platform: .fcm, token: token).device  // the same text on another platform
        for device in [used, sharing, other, fcm] {
            try await store.insertDevice(device)
            #expect(try await store.device(id: device.id)?.isActive == true)  // now cached
        }
        var notification = Fixtures.notification(for: used)
        _ = try await store.accept(
            notification, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil),
            lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        notification.status = .failed
        notification.lastError = "Unregistered"
        _ = try await store.commit(
            WriteBatch(outcomes: [DeliveryOutcome(notification: notification, releasesQuota: true, deadToken: token)], owner: "a"))
        for device in [used, sharing] {
            let stored = try #require(try await store.device(id: device.id))
            #expect(stored.isActive == false)
            #expect(stored.inactiveReason == "Unregistered")
            #expect(stored.token == token)
        }
        #expect(try await store.device(id: other.id)?.isActive == true)
        #expect(try await store.device(id: fcm.id)?.isActive == true)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deactivatingADeadTokenReachesDevicesThatKeptItEvenIfTheOneItWasUsedForMovedOn(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        var used = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let sharing = Fixtures.device(token: Fixtures.apnsToken(1)).device
        try await store.insertDevice(used)
        try await store.insertDevice(sharing)
        used.token = Fixtures.apnsToken(2)
        try await store.updateDevice(used)
        try await store.deactivateDevice(id: used.id, token: Fixtures.apnsToken(1), reason: "Unregistered", at: start)
        #expect(try await store.device(id: used.id)?.isActive == true)
        #expect(try await store.device(id: sharing.id)?.isActive == false)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deviceCountFollowsInsertsAndDeletes(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        #expect(try await store.deviceCount() == 0)
        let devices = (1...3).map { Fixtures.device(token: Fixtures.apnsToken($0)).device }
        for device in devices { try await store.insertDevice(device) }
        #expect(try await store.deviceCount() == 3)
        var changed = devices[0]
        changed.token = Fixtures.apnsToken(2)
        try await store.updateDevice(changed)
        #expect(try await store.deviceCount() == 3)
        try await store.deleteDevice(id: devices[1].id)
        #expect(try await store.deviceCount() == 2)
        try await store.close()
    }

    /// Migration v4 on a database written by v3: APNs tokens become lowercase, one token can then be bound to several
    /// devices, and the device count starts from the devices already there.
    @Test func migrationV4LowercasesAPNsTokensAndDropsTheUniqueToken() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let apple = Fixtures.device(token: Fixtures.apnsToken(0xAB)).device
        let fcm = Fixtures.device(platform: .fcm, token: "AbC:APA91b-Mixed_Case").device
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteMigrations.migrator.migrate(queue, upTo: "v3: delivery leases, parked notifications, quota notice")
            try await queue.write { db in
                for (device, token) in [(apple, Fixtures.apnsToken(0xAB).uppercased()), (fcm, "AbC:APA91b-Mixed_Case")] {
                    try db.execute(
                        sql: """
                            INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                                created_at, updated_at) VALUES (?, ?, ?, ?, 'production', ?, 1, 0, 0)
                            """,
                        arguments: [device.id.uuidString.lowercased(), device.userIDHash, device.secretHash, device.platform.rawValue, token])
                }
            }
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        #expect(try await store.device(id: apple.id)?.token == Fixtures.apnsToken(0xAB))
        #expect(try await store.device(id: fcm.id)?.token == "AbC:APA91b-Mixed_Case")  // FCM tokens are case-sensitive
        #expect(try await store.deviceCount() == 2)
        let sharing = Fixtures.device(token: Fixtures.apnsToken(0xAB)).device
        try await store.insertDevice(sharing)
        #expect(try await store.deviceCount() == 3)
        #expect(try await store.device(id: apple.id)?.isActive == true)
        try await store.close()
    }
}
