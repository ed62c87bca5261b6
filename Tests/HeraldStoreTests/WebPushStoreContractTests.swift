import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// What Web Push asks of every store: a device's address data (Web Push's keys, opaque to the store; SQLite
/// migration v22, PostgreSQL 19) kept beside its endpoint, replaced on re-registration, and one server setting that
/// the first writer decides.
@Suite("Web Push store contract")
struct WebPushStoreContractTests {
    static let keys = #"{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}"#

    @Test(arguments: Backend.available)
    func aWebPushDeviceKeepsItsEndpointAndKeysAndReRegistrationReplacesThem(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let now = Date(timeIntervalSince1970: 1_763_769_600)
        var device = Device(
            userIDHash: Secrets.hash("webpush-user"), secretHash: Secrets.hash("secret"), platform: .webpush, environment: .production,
            token: "https://fcm.googleapis.com/fcm/send/abc", createdAt: now, updatedAt: now, addressData: Self.keys)
        try await store.insertDevice(device)
        #expect(try await store.device(id: device.id) == device)
        #expect(try await store.device(userIDHash: device.userIDHash)?.address == PushAddress(token: device.token, data: Self.keys))

        device.token = "https://updates.push.services.mozilla.com/wpush/v2/def"
        device.addressData = #"{"p256dh":"BOther","auth":"other"}"#
        try await store.updateDevice(device)
        #expect(try await store.device(id: device.id) == device)

        // A device that moves to another platform loses its keys.
        device.platform = .apns
        device.address = PushAddress(token: Fixtures.apnsToken(9))
        try await store.updateDevice(device)
        #expect(try await store.device(id: device.id)?.addressData == nil)
        try await store.close()
    }

    /// A provider the store has never heard of: its platform's name and its address, token and data, are kept as they
    /// are, counted on the dashboard, and its dead token found, with no change to the schema.
    @Test(arguments: Backend.available)
    func aDeviceOfAProviderAddedSinceIsKeptAsItIs(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let now = Date(timeIntervalSince1970: 1_763_769_600)
        let pigeon = try #require(Platform(rawValue: "pigeon"))
        let device = Device(
            userIDHash: Secrets.hash("pigeon-user"), secretHash: Secrets.hash("secret"), platform: pigeon, environment: .production,
            token: "loft-7/bird-3", createdAt: now, updatedAt: now, addressData: #"{"ring":"blue"}"#)
        try await store.insertDevice(device)
        #expect(try await store.device(id: device.id) == device)
        #expect(try await store.activeTokens(platform: pigeon) == [device.id: "loft-7/bird-3"])
        #expect(try await store.deviceTallies().contains { $0.platform == pigeon && $0.isActive && $0.count == 1 })
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func theFirstValueStoredUnderASettingIsTheOneEveryCallerGets(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        #expect(try await store.setting(named: "webpush.vapid_private_key") == nil)
        #expect(try await store.setting(named: "webpush.vapid_private_key", insertingIfAbsent: "first") == "first")
        #expect(try await store.setting(named: "webpush.vapid_private_key", insertingIfAbsent: "second") == "first")
        #expect(try await store.setting(named: "webpush.vapid_private_key") == "first")
        // Callers racing for the first write all get one value.
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<8 { group.addTask { try await store.setting(named: "race", insertingIfAbsent: "value-\(index)") } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(values.count == 1)
        try await store.close()
    }
}
