import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Finding 6: failed credential checks are throttled on every endpoint that checks a credential, per client address,
/// and a lock-out does not refuse a valid credential this server has seen.
@Suite("Credential guessing")
struct CredentialThrottleTests {
    static let registrationToken = "only-our-app-knows-this-3f9c"
    static let registrationTokenHeader = HTTPField.Name("X-Herald-Registration-Token")!

    /// One credential check: how to use a valid credential, how to guess, and what each answers.
    enum Endpoint: String, CaseIterable, CustomTestStringConvertible {
        case deleteRegistration, notificationStatus, reRegistration, registrationToken, notify, homeAssistant,
            homeAssistantRateLimits, apiTokenManagement, actionNotifications

        var testDescription: String { rawValue }

        /// The status a wrong guess gets before the lock-out.
        var wrongStatus: HTTPResponse.Status {
            switch self {
            case .notificationStatus, .notify: .notFound
            case .actionNotifications: .unauthorized
            default: .forbidden
            }
        }

        /// Uses the owner's valid credential, as the owner would; returns the answer.
        func valid(_ client: any TestClientProtocol, _ owner: Registration, _ state: State) async throws -> TestResponse {
            switch self {
            case .deleteRegistration, .reRegistration:
                let body = #"{"token": "\#(Fixtures.apnsToken(2))", "user_id": "\#(owner.userID)", "device_secret": "\#(owner.secret)"}"#
                return try await client.post("/api/push/register", body)
            case .notificationStatus:
                return try await client.execute(uri: "/api/push/notifications/\(state.notificationID)", method: .get, headers: owner.bearer)
            case .registrationToken:
                return try await client.post(
                    "/api/push/register", #"{"platform": "websocket"}"#, headers: [registrationTokenHeader: CredentialThrottleTests.registrationToken])
            case .notify:
                return try await client.notify(owner.userID)
            case .homeAssistant:
                return try await client.post("/api/push/homeassistant", homeAssistantBody(owner.userID))
            case .homeAssistantRateLimits:
                return try await client.post("/api/push/homeassistant/rate_limits", #"{"push_token": "\#(owner.userID)"}"#)
            case .apiTokenManagement:
                return try await client.execute(uri: "/api/push/tokens", method: .get, headers: owner.basic)
            case .actionNotifications:
                return try await client.sendAction([.authorization: "Bearer \(state.apiToken)"])
            }
        }

        /// After the lock-out: the owner's valid credential once more (for `deleteRegistration`, the delete itself).
        func validAgain(_ client: any TestClientProtocol, _ owner: Registration, _ state: State) async throws -> TestResponse {
            guard self == .deleteRegistration else { return try await valid(client, owner, state) }
            return try await client.execute(uri: "/api/push/register", method: .delete, headers: owner.basic)
        }

        /// A guess: the right kind of credential with a random value.
        func wrong(_ client: any TestClientProtocol, _ owner: Registration, _ state: State) async throws -> TestResponse {
            let guess = Secrets.random256BitHex()
            switch self {
            case .deleteRegistration:
                return try await client.execute(
                    uri: "/api/push/register", method: .delete, headers: Registration(userID: owner.userID, secret: guess).basic)
            case .reRegistration:
                let body = #"{"token": "\#(Fixtures.apnsToken(2))", "user_id": "\#(owner.userID)", "device_secret": "\#(guess)"}"#
                return try await client.post("/api/push/register", body)
            case .notificationStatus:
                return try await client.execute(
                    uri: "/api/push/notifications/\(state.notificationID)", method: .get, headers: [.authorization: "Bearer \(guess)"])
            case .registrationToken:
                return try await client.post("/api/push/register", #"{"platform": "websocket"}"#, headers: [registrationTokenHeader: guess])
            case .notify:
                return try await client.notify(guess)
            case .homeAssistant:
                return try await client.post("/api/push/homeassistant", homeAssistantBody(guess))
            case .homeAssistantRateLimits:
                return try await client.post("/api/push/homeassistant/rate_limits", #"{"push_token": "\#(guess)"}"#)
            case .apiTokenManagement:
                return try await client.execute(
                    uri: "/api/push/tokens", method: .get, headers: Registration(userID: owner.userID, secret: guess).basic)
            case .actionNotifications:
                return try await client.sendAction([.authorization: "Bearer hrd_\(guess)"])
            }
        }
    }

    struct State: Sendable {
        var notificationID = ""
        var apiToken = ""
    }

    @Test(arguments: Endpoint.allCases)
    func tenWrongCredentialsLockTheAddressOutButNotAValidCredentialUsedBefore(_ endpoint: Endpoint) async throws {
        var configured = try TestServer()
        configured.configuration.registrationToken = Self.registrationToken
        let server = configured
        try await server.run { client in
            let registered = try await client.post(
                "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(1))"}"#,
                headers: [Self.registrationTokenHeader: Self.registrationToken])
            let json = try registered.json()
            let owner = Registration(
                userID: try #require(json["user_id"]?.stringValue), secret: try #require(json["device_secret"]?.stringValue))
            var state = State()
            state.notificationID = try #require(try await client.notify(owner.userID).json()["id"]?.stringValue)
            state.apiToken = try await client.createToken(for: owner).token

            let before = try await endpoint.valid(client, owner, state)
            #expect(before.status.kind == .successful, "\(before.status)")
            for attempt in 1...10 {
                #expect(try await endpoint.wrong(client, owner, state).status == endpoint.wrongStatus, "attempt \(attempt)")
            }
            let refused = try await endpoint.wrong(client, owner, state)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "60")
            let body = try refused.json()
            if endpoint == .homeAssistant || endpoint == .homeAssistantRateLimits {
                #expect(body["message"]?.stringValue?.isEmpty == false)  // Home Assistant's dialect
            } else {
                #expect(body["code"] == "too_many_auth_failures")
            }

            let after = try await endpoint.validAgain(client, owner, state)
            #expect(after.status.kind == .successful, "\(after.status)")

            // The window is over: guesses are answered again (for a deleted device, 404 instead of 403).
            server.clock.advance(by: 60)
            #expect([.unauthorized, .forbidden, .notFound].contains(try await endpoint.wrong(client, owner, state).status))
        }
    }

    @Test func failuresOnDifferentEndpointsAddUpAndAValidCredentialNeverSeenIsRefusedDuringTheLockOut() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            for _ in 1...5 {
                #expect(try await client.notify(Secrets.random256BitHex()).status == .notFound)
                let stranger = Registration(userID: Secrets.random256BitHex(), secret: Secrets.random256BitHex())
                #expect(try await client.execute(uri: "/api/push/register", method: .delete, headers: stranger.basic).status == .notFound)
            }
            // A device this process never saw (written by another process on the same file) is refused for now.
            let (device, userID, _) = Fixtures.device(token: Fixtures.apnsToken(9))
            try await server.openStore().insertDevice(device)
            let unseen = try await client.notify(userID)
            #expect(unseen.status == .tooManyRequests)
            #expect(try unseen.json()["code"] == "too_many_auth_failures")
            // The device registered here (its credentials were issued by this process) is not.
            #expect(try await client.notify(owner.userID).status == .created)
            server.clock.advance(by: 60)
            #expect(try await client.notify(userID).status == .created)
        }
    }

    @Test func malformedCredentialsAndDeactivatedDevicesAreNotCountedAsGuesses() async throws {
        let apns = try await APNsTestServer.start()
        let token = Fixtures.apnsToken(0x41)
        apns.production.markUnregistered(token)
        try await apns.server.run { client in
            let dead = try await client.register(token: token)
            for _ in 1...11 {
                #expect(try await client.notify("not-a-user-id").status == .badRequest)
                #expect(try await client.notify(dead.userID).status == .gone)
            }
            #expect(try await client.notify(Secrets.random256BitHex()).status == .notFound)
        }
        try await apns.shutdown()
    }

    @Test func theClientAddressComesFromATrustedProxysHeader() async throws {
        var server = try TestServer()
        server.configuration.trustedProxies = ["127.0.0.0/8"]
        server.configuration.clientAddressHeader = "X-Real-Client"
        let header = HTTPField.Name("X-Real-Client")!
        try await server.run { client in
            for _ in 1...10 {
                let guess = try await client.post(
                    "/api/push/notify", #"{"user_id": "\#(Secrets.random256BitHex())", "title": "x", "body": "y"}"#, headers: [header: "192.0.2.1"])
                #expect(guess.status == .notFound)
            }
            let body = #"{"user_id": "\#(Secrets.random256BitHex())", "title": "x", "body": "y"}"#
            #expect(try await client.post("/api/push/notify", body, headers: [header: "192.0.2.1"]).status == .tooManyRequests)
            // A spoofed entry left of the real client changes nothing; another client is not locked out.
            #expect(try await client.post("/api/push/notify", body, headers: [header: "198.51.100.9, 192.0.2.1"]).status == .tooManyRequests)
            #expect(try await client.post("/api/push/notify", body, headers: [header: "192.0.2.2"]).status == .notFound)
            // The proxy's own address (no header) is another client too.
            #expect(try await client.post("/api/push/notify", body).status == .notFound)
        }
    }

    /// Issue 29, item 7: guesses spread over the /64s of one IPv6 /48 (one each) are throttled once the /48 has had
    /// 100; before, every new /64 had ten guesses of its own.
    @Test func guessesSpreadOverAnIPv6FortyEightAreThrottled() async throws {
        var configured = try TestServer()
        configured.configuration.trustedProxies = ["127.0.0.0/8"]
        let server = configured
        try await server.run { client in
            func guess(from address: String) async throws -> TestResponse {
                try await client.post(
                    "/api/push/notify", #"{"user_id": "\#(Secrets.random256BitHex())", "title": "x", "body": "y"}"#,
                    headers: [HTTPField.Name("X-Forwarded-For")!: address])
            }
            for subnet in 0..<100 {
                #expect(try await guess(from: "2001:db8:77:\(String(subnet, radix: 16))::1").status == .notFound, "subnet \(subnet)")
            }
            let refused = try await guess(from: "2001:db8:77:ffff::1")
            #expect(refused.status == .tooManyRequests)
            #expect(try refused.json()["code"] == "too_many_auth_failures")
            #expect(try await guess(from: "2001:db8:78::1").status == .notFound)  // another /48
            server.clock.advance(by: 60)
            #expect(try await guess(from: "2001:db8:77:ffff::1").status == .notFound)
        }
    }

    @Test func webSocketSubscriptionsAreThrottledToo() async throws {
        var server = try TestServer()
        server.configuration.webSocketSubscribesPerMinute = 0  // twelve subscribes on one socket (ConnectionCapTests has the limit)
        // No subscription succeeds for a while: on a busy machine the eleven refusals took longer than the 10 s a socket
        // may stay unsubscribed, and the server closed it under the test (ConnectionCapTests covers that timeout).
        server.configuration.webSocketSubscribeTimeout = .seconds(3_600)
        try await server.run { client in
            let owner = try await client.register()
            let port = try #require(client.port)
            let socket = WebSocketTestClient(port: port)
            for id in 1...10 {
                socket.send(#"{"id": \#(id), "type": "push_notification_channel", "user_id": "\#(Secrets.random256BitHex())", "device_secret": "x"}"#)
                #expect(await socket.next()?["error"]?.objectValue?["code"] == "unknown_user")
            }
            socket.send(#"{"id": 11, "type": "push_notification_channel", "user_id": "\#(Secrets.random256BitHex())", "device_secret": "x"}"#)
            #expect(await socket.next()?["error"]?.objectValue?["code"] == "too_many_auth_failures")
            #expect(try await client.notify(Secrets.random256BitHex()).status == .tooManyRequests)
            // The owner's credentials, issued by this server, still subscribe.
            await socket.subscribe(owner, id: 12)
            await socket.close()
        }
    }
}
