import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /api/push/register` with a Web Push subscription, `GET /api/push/webpush/key`, and the egress rules: who may
/// be an endpoint at registration, and which addresses the provider refuses to connect to at send time.
@Suite("Web Push registration and egress")
struct WebPushRegistrationTests {
    private static let keys = WebPushDecryption.Subscriber()

    private static func subscription(endpoint: String, p256dh: String = keys.p256dh, auth: String = keys.authText) -> JSONObject {
        ["endpoint": .string(endpoint), "keys": ["p256dh": .string(p256dh), "auth": .string(auth)]]
    }

    @Test func aBrowsersSubscriptionToAKnownPushServiceIsRegisteredLikeEveryDevice() async throws {
        let server = try TestServer()
        try await server.run { client in
            for endpoint in [
                "https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b", "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
                "https://web.push.apple.com/QGx3c", "https://wns2-by3p.notify.windows.com/w/?token=BQYAAA",
            ] {
                let response = try await client.post("/api/push/register", webPushRegistrationBody(Self.subscription(endpoint: endpoint)))
                #expect(response.status == .created, "\(endpoint)")
                #expect(try response.json()["device_secret"]?.stringValue?.count == 64)
            }
        }
        let store = try server.openStore()
        let devices = try await store.deviceTallies()
        #expect(devices.first { $0.platform == .webpush }?.count == 4)
    }

    @Test(arguments: [
        ("http://fcm.googleapis.com/fcm/send/x", "subscription.endpoint", "https://"),
        ("https://evil.example/push/x", "subscription.endpoint", "known push service"),
        ("https://127.0.0.1:8080/push/x", "subscription.endpoint", "known push service"),
        ("https://push.apple.com.evil.example/x", "subscription.endpoint", "known push service"),
    ])
    func endpointsThatAreNotAKnownPushServiceAreRefused(endpoint: String, field: String, rule: String) async throws {
        let server = try TestServer()
        try await server.run { client in
            let response = try await client.post("/api/push/register", webPushRegistrationBody(Self.subscription(endpoint: endpoint)))
            #expect(response.status == .badRequest)
            let body = try response.json()
            #expect(body["field"] == .string(field))
            #expect(body["error"]?.stringValue?.contains(rule) == true, "\(body)")
        }
    }

    @Test func malformedKeysAndMissingPartsAreRefusedNamingTheField() async throws {
        let server = try TestServer()
        let endpoint = "https://fcm.googleapis.com/fcm/send/x"
        let shortKey = Base64URL.encode(Data(repeating: 4, count: 33))
        let cases: [(String, String)] = [
            (webPushRegistrationBody(Self.subscription(endpoint: endpoint, p256dh: shortKey)), "subscription.keys.p256dh"),
            (webPushRegistrationBody(Self.subscription(endpoint: endpoint, auth: Base64URL.encode(Data(count: 8)))), "subscription.keys.auth"),
            (webPushRegistrationBody(["endpoint": .string(endpoint)]), "subscription.keys"),
            (#"{"platform": "webpush"}"#, "subscription"),
            (#"{"platform": "webpush", "token": "abc"}"#, "token"),
        ]
        try await server.run { client in
            for (body, field) in cases {
                let response = try await client.post("/api/push/register", body)
                #expect(response.status == .badRequest)
                #expect(try response.json()["field"] == .string(field), "\(body)")
            }
        }
    }

    @Test func theVAPIDKeyIsPublicAndKeptAcrossRestarts() async throws {
        let server = try TestServer()
        let first = try await server.run { client in
            let response = try await client.execute(uri: "/api/push/webpush/key", method: .get)
            #expect(response.status == .ok)
            return try #require(try response.json()["public_key"]?.stringValue)
        }
        #expect(Base64URL.decode(first)?.count == 65)
        #expect(Base64URL.decode(first)?.first == 0x04)
        let second = try await server.run { client in
            try #require(try await client.execute(uri: "/api/push/webpush/key", method: .get).json()["public_key"]?.stringValue)
        }
        #expect(first == second)
    }

    @Test func aListedHostThatResolvesToAPrivateAddressIsRefusedAtSendTimeUnlessItsNetworkIsListed() async throws {
        let refusing = try await WebPushTestServer.start(allowedHosts: ["localhost"])
        let viaName = refusing.double.makeSubscription(host: "localhost")
        try await refusing.server.run { client in
            let registration = try await client.registerWebPush(viaName)
            let response = try await client.notify(registration.userID)
            let id = try #require(try response.json()["id"]?.stringValue)
            let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(state["status"] == "failed")
            #expect(state["last_error"]?.stringValue?.contains("private or special-purpose address") == true, "\(state)")
        }
        #expect(refusing.double.received.isEmpty)
        try await refusing.shutdown()

        // With the network listed, the provider connects to the address it vetted, verifying TLS for `localhost`.
        let allowing = try await WebPushTestServer.start(allowedHosts: ["localhost", "127.0.0.0/8", "::1"])
        let allowed = allowing.double.makeSubscription(host: "localhost")
        try await allowing.server.run { client in
            let registration = try await client.registerWebPush(allowed)
            #expect(try await client.notify(registration.userID).json()["status"] == "delivered")
            let message = try #require(await allowing.received(for: allowed))
            #expect(message.claims["aud"] == .string("https://localhost:\(allowing.double.port)"))
        }
        try await allowing.shutdown()
    }
}
