import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// What Web Push asks of every store: a device's subscription keys kept beside its endpoint (SQLite migration v11,
/// PostgreSQL 8), replaced on re-registration, and one server setting that the first writer decides.
@Suite("Web Push store contract")
struct WebPushStoreContractTests {
    @Test(arguments: Backend.available)
    func aWebPushDeviceKeepsItsEndpointAndKeysAndReRegistrationReplacesThem(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let now = Date(timeIntervalSince1970: 1_763_769_600)
        var device = Device(
            userIDHash: Secrets.hash("webpush-user"), secretHash: Secrets.hash("secret"), platform: .webpush, environment: .production,
            token: "https://fcm.googleapis.com/fcm/send/abc", createdAt: now, updatedAt: now,
            webPushKeys: WebPushKeys(
                p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
                auth: "tBHItJI5svbpez7KI4CCXg"))
        try await store.insertDevice(device)
        #expect(try await store.device(id: device.id) == device)
        #expect(try await store.device(userIDHash: device.userIDHash)?.webPushKeys == device.webPushKeys)

        device.token = "https://updates.push.services.mozilla.com/wpush/v2/def"
        device.webPushKeys = WebPushKeys(p256dh: "BOther", auth: "other")
        try await store.updateDevice(device)
        #expect(try await store.device(id: device.id) == device)

        // A device that moves to another platform loses its keys.
        device.platform = .apns
        device.token = Fixtures.apnsToken(9)
        device.webPushKeys = nil
        try await store.updateDevice(device)
        #expect(try await store.device(id: device.id)?.webPushKeys == nil)
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
