import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Registration cannot be flooded (per-address rate limit, token limits, device cap, registration token) and cannot
/// take a token away from another USER_ID.
@Suite("Registration hardening")
struct RegistrationHardeningTests {
    /// A server that believes `X-Forwarded-For` from loopback, so that a test can speak for several client addresses.
    static func behindProxy(registrationsPerMinute: Int = 20) throws -> TestServer {
        var server = try TestServer()
        server.configuration.trustedProxies = ["127.0.0.1", "::1"]
        server.configuration.registrationsPerMinute = registrationsPerMinute
        return server
    }

    static func from(_ address: String, _ headers: HTTPFields = [:]) -> HTTPFields {
        var fields = headers
        fields[HTTPField.Name("X-Forwarded-For")!] = address
        return fields
    }

    static func apnsBody(_ seed: Int) -> String { #"{"token": "\#(Fixtures.apnsToken(seed))"}"# }

    @Test func newRegistrationsAreRateLimitedPerClientAddress() async throws {
        let server = try Self.behindProxy(registrationsPerMinute: 3)
        try await server.run { client in
            var first: Registration?
            for seed in 1...3 {
                let response = try await client.post("/api/push/register", Self.apnsBody(seed), headers: Self.from("203.0.113.7"))
                #expect(response.status == .created)
                let json = try response.json()
                first = first ?? Registration(userID: json["user_id"]?.stringValue ?? "", secret: json["device_secret"]?.stringValue ?? "")
            }
            let refused = try await client.post("/api/push/register", Self.apnsBody(4), headers: Self.from("203.0.113.7"))
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "20")  // 3 a minute: one more every 20 seconds
            let json = try refused.json()
            #expect(json["code"] == "registration_rate_limited")
            #expect(json["error"]?.stringValue?.isEmpty == false)

            // Another client (the proxy appended it after what the client claimed) is not affected.
            let other = try await client.post(
                "/api/push/register", Self.apnsBody(5), headers: Self.from("203.0.113.7, 198.51.100.2"))
            #expect(other.status == .created)
            // A re-registration with the USER_ID's own credentials creates nothing; one that repeats its token is not
            // counted, one that changes it is (issue 37): the bucket is empty.
            let owner = try #require(first)
            let same = try await client.post("/api/push/register", Self.apnsBody(1), headers: Self.from("203.0.113.7", owner.basic))
            #expect(same.status == .ok)
            let again = try await client.post("/api/push/register", Self.apnsBody(6), headers: Self.from("203.0.113.7", owner.basic))
            #expect(again.status == .tooManyRequests)

            server.clock.advance(by: 20)
            #expect(try await client.post("/api/push/register", Self.apnsBody(7), headers: Self.from("203.0.113.7")).status == .created)
            #expect(try await client.post("/api/push/register", Self.apnsBody(8), headers: Self.from("203.0.113.7")).status == .tooManyRequests)
        }
    }

    @Test func ipv6ClientsAreCountedByTheirSlash64() async throws {
        let server = try Self.behindProxy(registrationsPerMinute: 1)
        try await server.run { client throws in
            #expect(try await client.post("/api/push/register", Self.apnsBody(1), headers: Self.from("[2001:db8:1:2::1]:4711")).status == .created)
            #expect(try await client.post("/api/push/register", Self.apnsBody(2), headers: Self.from("2001:db8:1:2::ffff")).status == .tooManyRequests)
            #expect(try await client.post("/api/push/register", Self.apnsBody(3), headers: Self.from("2001:db8:1:3::1")).status == .created)
        }
    }

    @Test func withoutTrustedProxiesTheForwardingHeaderIsIgnored() async throws {
        var server = try TestServer()
        server.configuration.registrationsPerMinute = 2
        try await server.run { client in
            for (seed, address) in ["203.0.113.1", "203.0.113.2"].enumerated() {
                #expect(try await client.post("/api/push/register", Self.apnsBody(seed), headers: Self.from(address)).status == .created)
            }
            let refused = try await client.post("/api/push/register", Self.apnsBody(3), headers: Self.from("203.0.113.3"))
            #expect(refused.status == .tooManyRequests)
        }
    }

    @Test(arguments: [
        (#"{"token": "\#(String(repeating: "a", count: 63))"}"#, "even number of hex characters from 64 to 200"),
        (#"{"token": "\#(String(repeating: "a", count: 202))"}"#, "even number of hex characters from 64 to 200"),
        (#"{"token": "\#(String(repeating: "a", count: 4094))"}"#, "even number of hex characters from 64 to 200"),
        (#"{"token": "\#(String(repeating: "g", count: 64))"}"#, "hexadecimal"),
        (#"{"platform": "fcm", "token": "\#(String(repeating: "b", count: 513))"}"#, "1 to 512 characters"),
        (#"{"platform": "fcm", "token": "\#(String(repeating: "b", count: 4095))"}"#, "1 to 512 characters"),
        (#"{"platform": "fcm", "token": ""}"#, "token is required"),
        (#"{"platform": "fcm", "token": "abc def"}"#, "letters, digits and - _ : . only"),
        (#"{"platform": "fcm", "token": "abc/../def"}"#, "letters, digits and - _ : . only"),
    ])
    func tokensBreakingThePlatformsRulesAre400NamingTheFieldAndTheRule(body: String, rule: String) async throws {
        try await TestServer().run { client in
            let response = try await client.post("/api/push/register", body)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["field"] == "token")
            #expect(json["error"]?.stringValue?.contains(rule) == true, "\(json)")
        }
    }

    @Test func tokensAtTheLimitsAreTaken() async throws {
        try await TestServer().run { client throws in
            let fcm = "eXampleInstance:APA91b" + String(repeating: "x_-9", count: 122) + "ab"
            #expect(fcm.count == 512)
            for body in [
                #"{"token": "\#(String(repeating: "Ab", count: 100))"}"#,
                #"{"platform": "fcm", "token": "\#(fcm)"}"#,
            ] {
                #expect(try await client.post("/api/push/register", body).status == .created, "\(body.prefix(40))")
            }
        }
    }

    @Test func theDeviceCapRefusesNewDevicesButNotReRegistrations() async throws {
        var server = try TestServer()
        server.configuration.maximumDevices = 2
        try await server.run { client in
            let first = try await client.register(token: Fixtures.apnsToken(1))
            _ = try await client.register(token: Fixtures.apnsToken(2))
            let refused = try await client.post("/api/push/register", Self.apnsBody(3))
            #expect(refused.status == .serviceUnavailable)
            #expect(try refused.json()["code"] == "device_limit_reached")
            #expect(try await client.post("/api/push/register", #"{"platform": "websocket"}"#).status == .serviceUnavailable)

            let again = try await client.post("/api/push/register", Self.apnsBody(4), headers: first.basic)
            #expect(again.status == .ok)
            #expect(try await client.execute(uri: "/api/push/register", method: .delete, headers: first.basic).status == .noContent)
            #expect(try await client.post("/api/push/register", Self.apnsBody(3)).status == .created)
        }
    }

    @Test func aRegistrationTokenIsRequiredForNewDevicesOnlyWhenConfigured() async throws {
        var server = try TestServer()
        server.configuration.registrationToken = "only-our-app-knows-this-3f9c"
        let header = HTTPField.Name("X-Herald-Registration-Token")!
        try await server.run { client in
            let missing = try await client.post("/api/push/register", Self.apnsBody(1))
            #expect(missing.status == .unauthorized)
            #expect(try missing.json()["code"] == "registration_token_required")

            let wrong = try await client.post("/api/push/register", Self.apnsBody(1), headers: [header: "only-our-app-knows-this-3f9d"])
            #expect(wrong.status == .forbidden)
            #expect(try wrong.json()["code"] == "wrong_registration_token")

            let right = try await client.post("/api/push/register", Self.apnsBody(1), headers: [header: "only-our-app-knows-this-3f9c"])
            #expect(right.status == .created)
            let json = try right.json()
            let owner = Registration(
                userID: try #require(json["user_id"]?.stringValue), secret: try #require(json["device_secret"]?.stringValue))

            // A re-registration with the USER_ID's own credentials does not need it.
            #expect(try await client.post("/api/push/register", Self.apnsBody(2), headers: owner.basic).status == .ok)
            let body = #"{"token": "\#(Fixtures.apnsToken(3))", "user_id": "\#(owner.userID)", "device_secret": "\#(owner.secret)"}"#
            #expect(try await client.post("/api/push/register", body).status == .ok)
        }
    }

    /// Finding 5: registering someone else's token (in another letter case) without credentials takes nothing away.
    @Test func registeringAnotherUsersTokenTakesNothingAwayFromIt() async throws {
        let apns = try await APNsTestServer.start()
        let token = Fixtures.apnsToken(0xAB)  // lowercase hex
        try await apns.server.run { client in
            let victim = try await client.register(token: token.uppercased())
            let attacker = try await client.register(token: token)
            for user in [victim, attacker] {
                let response = try await client.notify(user.userID, title: "For \(user.userID.prefix(6))")
                #expect(response.status == .created)
                #expect(try response.json()["status"] == "delivered")
            }
            let pushes = apns.production.acceptedPushes
            #expect(pushes.count == 2)
            #expect(pushes.allSatisfy { $0.path == "/3/device/\(token)" })
            let titles = pushes.compactMap { push in
                (try? JSONValue.decode(push.body))?.objectValue?["aps"]?.objectValue?["alert"]?.objectValue?["title"]?.stringValue
            }
            #expect(Set(titles) == ["For \(victim.userID.prefix(6))", "For \(attacker.userID.prefix(6))"])
        }
        try await apns.shutdown()
    }

    @Test func aReRegistrationWithCredentialsChangesOnlyThatUsersToken() async throws {
        let apns = try await APNsTestServer.start()
        let shared = Fixtures.apnsToken(0x21)
        let moved = Fixtures.apnsToken(0x22)
        try await apns.server.run { client in
            let first = try await client.register(token: shared)
            let second = try await client.register(token: shared)
            #expect(try await client.post("/api/push/register", #"{"token": "\#(moved.uppercased())"}"#, headers: second.basic).status == .ok)
            #expect(try await client.notify(first.userID).status == .created)
            #expect(try await client.notify(second.userID).status == .created)
            #expect(apns.production.acceptedPushes.map(\.path) == ["/3/device/\(shared)", "/3/device/\(moved)"])
        }
        let store = try apns.server.openStore()
        #expect(try await store.deviceCount() == 2)
        try await apns.shutdown()
    }

    @Test func aDeadTokenDeactivatesEveryUserIDBoundToIt() async throws {
        let apns = try await APNsTestServer.start()
        let token = Fixtures.apnsToken(0x31)
        try await apns.server.run { client in
            let first = try await client.register(token: token)
            let second = try await client.register(token: token.uppercased())
            let elsewhere = try await client.register(token: Fixtures.apnsToken(0x32))
            apns.production.markUnregistered(token)
            let dead = try await client.notify(first.userID)
            #expect(dead.status == .gone)
            #expect(apns.production.requests.count == 1)
            let alsoDead = try await client.notify(second.userID)
            #expect(alsoDead.status == .gone)
            #expect(try alsoDead.json()["code"] == "device_must_reregister")
            #expect(apns.production.requests.count == 1)  // known dead: not tried again
            #expect(try await client.notify(elsewhere.userID).status == .created)
        }
        try await apns.shutdown()
    }
}
