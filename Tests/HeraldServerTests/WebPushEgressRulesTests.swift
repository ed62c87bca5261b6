import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HeraldWebPush
import HummingbirdTesting
import Logging
import Testing

/// Issue 37 over real HTTP: an endpoint's port (the crash loop), what a stored row holds, the start-up sweep, the
/// re-registration rate and the cap on a device's distinct Web Push endpoints. Each answer is a 4xx naming
/// `subscription.endpoint`, nothing is half-stored, and the server keeps answering.
@Suite("Web Push egress rules")
struct WebPushEgressRulesTests {
    private static let keys = WebPushDecryption.Subscriber()

    private static func body(_ endpoint: String) -> String {
        webPushRegistrationBody(["endpoint": .string(endpoint), "keys": ["p256dh": .string(keys.p256dh), "auth": .string(keys.authText)]])
    }

    private static func webPushDevice(_ endpoint: String) -> (device: Device, userID: UserID) {
        let userID = UserID.random()
        let device = Device(
            userIDHash: userID.lookupHash, secretHash: Secrets.hash(Secrets.random256BitHex()), platform: .webpush,
            environment: .production, token: endpoint, createdAt: Date(), updatedAt: Date(),
            addressData: WebPushKeys(p256dh: keys.p256dh, auth: keys.authText).addressData)
        return (device, userID)
    }

    @Test(arguments: [
        "https://fcm.googleapis.com:65536/fcm/send/x", "https://fcm.googleapis.com:99999/fcm/send/x",
        "https://fcm.googleapis.com:8443/fcm/send/x", "https://web.push.apple.com:80/x", "https://127.0.0.1:70000/push/x",
    ])
    func aPortTheRulesRefuseIsA400NamingTheEndpointAndNothingIsStored(endpoint: String) async throws {
        let store = InMemoryStore()
        var server = try TestServer()
        server.store = store
        server.configuration.webPush.allowedHosts = ["127.0.0.0/8"]
        try await server.run { client in
            let response = try await client.post("/api/push/register", Self.body(endpoint))
            #expect(response.status == .badRequest)
            let answer = try response.json()
            #expect(answer["field"] == "subscription.endpoint")
            #expect(answer["error"]?.stringValue?.contains("port") == true, "\(answer)")
            // Alive, and the same rules hold for a re-registration with the owner's credentials.
            let registration = try await client.register()
            let again = try await client.post("/api/push/register", Self.body(endpoint), headers: registration.basic)
            #expect(again.status == .badRequest)
            #expect(try again.json()["field"] == "subscription.endpoint")
        }
        #expect(try await store.deviceCount() == 1)
        #expect(try await store.activeTokens(platform: .webpush).isEmpty)
    }

    @Test func aStoredEndpointWithAPortOutOfRangeFailsItsNotificationAndTheServerLives() async throws {
        let web = try await WebPushTestServer.start()
        let store = InMemoryStore()
        var server = web.server
        server.store = store
        let good = web.double.makeSubscription()
        try await server.run { client in
            // Written as a row of an older version would be (registration refuses it now).
            let (bad, userID) = Self.webPushDevice("https://fcm.googleapis.com:99999/fcm/send/x")
            try await store.insertDevice(bad)
            let response = try await client.notify(userID.text)
            // The provider refused it for good (the rule, before anything was sent): the send's 502 `rejected_by_provider`.
            #expect(response.status == .badGateway, "\(response.status)")
            #expect(try response.json()["reason"]?.stringValue?.contains("port 443") == true)
            let id = try #require(try response.json()["id"]?.stringValue)
            let notificationID = try #require(UUID(uuidString: id))
            #expect(await eventually { (try? await store.notification(id: notificationID))?.status == .failed })
            let stored = try #require(try await store.notification(id: notificationID))
            #expect(stored.lastError?.contains("port 443") == true, "\(stored.lastError ?? "")")
            // The process is alive and delivers to others.
            let other = try await client.registerWebPush(good)
            #expect(try await client.notify(other.userID).json()["status"] == "delivered")
        }
        try await web.shutdown()
    }

    @Test func storedEndpointsTodaysRulesRefuseAreDeactivatedAtStartUpAndLoggedOnce() async throws {
        let store = InMemoryStore()
        let refused = [
            Self.webPushDevice("https://fcm.googleapis.com:99999/fcm/send/a").device,
            Self.webPushDevice("https://fcm.googleapis.com:8443/fcm/send/b").device,
            Self.webPushDevice("https://push.gone.example/c").device,
        ]
        let kept = Self.webPushDevice("https://fcm.googleapis.com/fcm/send/d").device
        for device in refused + [kept] { try await store.insertDevice(device) }
        let records = RecordingLogHandler.Records()
        var server = try TestServer()
        server.store = store
        let app = try await buildApplication(
            server.configuration, clock: server.clock, logger: Logger(label: "test") { _ in RecordingLogHandler(records: records) },
            store: store)
        let status = try await PatientLiveTest.run(app) { client in try await client.execute(uri: "/healthz", method: .get).status }
        #expect(status == .ok)
        for device in refused {
            let stored = try #require(try await store.device(id: device.id))
            #expect(!stored.isActive)
            #expect(stored.inactiveReason?.contains("register again") == true)
        }
        #expect(try await store.device(id: kept.id)?.isActive == true)
        let sweeps = records.all.filter { $0.message.contains("deactivated at start-up") }
        #expect(sweeps.count == 1)
        #expect(sweeps.first?.metadata["count"] == "3")
    }

    @Test func aReRegistrationThatChangesTheTokenIsCountedAgainstTheRegistrationRate() async throws {
        let store = InMemoryStore()
        var server = try TestServer()
        server.store = store
        server.configuration.registrationsPerMinute = 3
        try await server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(1))  // 1
            for token in 2...3 {  // 2, 3
                let changed = try await client.post(
                    "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(token))"}"#, headers: registration.basic)
                #expect(changed.status == .ok)
            }
            let limited = try await client.post(
                "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(4))"}"#, headers: registration.basic)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
            // Repeating the stored token (as an app does at every launch) is not counted.
            let same = try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(3))"}"#, headers: registration.basic)
            #expect(same.status == .ok)
        }
        #expect(try await store.activeTokens(platform: .apns).values.sorted() == [Fixtures.apnsToken(3)])
    }

    @Test func aDeviceNamesAtMostEightDistinctWebPushEndpointsInADay() async throws {
        let store = InMemoryStore()
        var server = try TestServer()
        server.store = store
        server.configuration.registrationsPerMinute = 0  // not this limit
        try await server.run { client in
            let first = try await client.post("/api/push/register", Self.body("https://fcm.googleapis.com/fcm/send/1"))
            let userID = try #require(try first.json()["user_id"]?.stringValue)
            let secret = try #require(try first.json()["device_secret"]?.stringValue)
            let basic = Registration(userID: userID, secret: secret).basic
            for number in 1...8 {
                let response = try await client.post(
                    "/api/push/register", Self.body("https://fcm.googleapis.com/fcm/send/\(number)"), headers: basic)
                #expect(response.status == .ok, "\(number)")
            }
            let ninth = try await client.post("/api/push/register", Self.body("https://fcm.googleapis.com/fcm/send/9"), headers: basic)
            #expect(ninth.status == .tooManyRequests)
            #expect(try ninth.json()["field"] == "subscription.endpoint")
            #expect(ninth.headers[.retryAfter] != nil)
            // One it already named is free.
            let back = try await client.post("/api/push/register", Self.body("https://fcm.googleapis.com/fcm/send/2"), headers: basic)
            #expect(back.status == .ok)
        }
        #expect(try await store.activeTokens(platform: .webpush).values.sorted() == ["https://fcm.googleapis.com/fcm/send/2"])
    }
}
