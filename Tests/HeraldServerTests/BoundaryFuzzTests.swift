import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Every dialect's members, one at a time, with every boundary value (``BoundaryValue/all``), over real HTTP against
/// the in-process server and the APNs (or FCM) double: each answer is a 2xx or a 4xx with a JSON body, never a 5xx,
/// and the server still answers afterwards. A trap ends the test process, so a request that crashes Herald fails the
/// run however it is reported. The members are ``BoundaryDialect/all``'s table; a new member is one more path there.
/// Serialized: its cases send about 1,400 requests, and fifteen of them at once beside the rest of the suite starved the
/// test process (PostgreSQL stores elsewhere could not connect within their 30 s).
@Suite("Boundary values in every dialect", .serialized)
struct BoundaryFuzzTests {
    /// Stands for the value in a body's JSON text until it is put in as it is (a 10,000-digit number has no
    /// `JSONValue`).
    static let placeholder = "@@boundary-value@@"

    @Test(arguments: BoundaryDialect.sends)
    func noBoundaryValueCrashesOrFailsASendOrRegistration(dialect: BoundaryDialect) async throws {
        try await Self.fuzz(dialect)
    }

    @Test(arguments: BoundaryDialect.activities)
    func noBoundaryValueCrashesOrFailsAnActivityPath(dialect: BoundaryDialect) async throws {
        try await Self.fuzz(dialect)
    }

    /// Every member of `dialect` with every boundary value, then `/healthz`.
    static func fuzz(_ dialect: BoundaryDialect) async throws {
        try await Self.withServer(for: dialect) { client, credentials, clock in
            for (method, path, body) in dialect.setUp(credentials) {
                let response = try await client.execute(
                    uri: path, method: method, headers: Self.jsonHeaders(dialect.headers(credentials)), body: ByteBuffer(string: body))
                #expect((200..<300).contains(response.status.code), "set-up \(method) \(path): \(response.status)")
            }
            var answered = 0
            for member in dialect.members {
                for value in dialect.values {
                    // Past the double's limit of 100 pushes per device in 10 s, APNs' refusal would be the answer.
                    clock.advance(by: 0.2)
                    let response = try await Self.send(dialect, member: member, value: value, credentials: credentials, client: client)
                    Self.expectAnswered(response, "\(dialect.name): \(member) = \(value)")
                    answered += 1
                }
            }
            #expect(answered == dialect.members.count * dialect.values.count)
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
        }
    }

    /// A WebSocket client message's `id` (echoed in the answer) with every boundary value: each is answered with a
    /// refusal, and the socket still subscribes afterwards.
    @Test func noBoundaryValueInAWebSocketMessageCrashesTheServer() async throws {
        var server = try TestServer()
        // The socket subscribes only at the end: it must not be closed for staying unsubscribed on a slow run.
        server.configuration.webSocketSubscribeTimeout = .seconds(3_600)
        try await server.run { client in
            let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
            let owner = Registration(
                userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
            let socket = WebSocketTestClient(port: try #require(client.port))
            for value in BoundaryValue.all {
                for message in [
                    #"{"id": \#(value.json), "type": "no_such_command"}"#,
                    // One value per message: two 10,000-digit ones would pass the 16 KB message limit (close 1009).
                    #"{"id": \#(value.json), "type": "push_notification_confirm", "confirm_id": "x"}"#,
                    #"{"id": \#(value.json), "type": "push_notification_channel", "user_id": "\#(owner.userID)"}"#,
                ] {
                    socket.send(message)
                    let answer = await socket.next()
                    #expect(answer?["type"] == "result" && answer?["success"] == false, "\(value): \(message.prefix(100))")
                }
            }
            await socket.subscribe(owner, id: 7)
            await socket.close()
        }
    }

    /// One case: the dialect's valid request with `member` set to `value`.
    static func send(
        _ dialect: BoundaryDialect, member: String, value: BoundaryValue, credentials: BoundaryDialect.Credentials,
        client: any TestClientProtocol
    ) async throws -> TestResponse {
        let headers = dialect.headers(credentials)
        guard let body = dialect.body?(credentials) else {
            var components = URLComponents()
            components.queryItems = [URLQueryItem(name: member, value: value.text)]
            let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
            return try await client.execute(uri: dialect.path + "?" + query, method: dialect.method, headers: headers)
        }
        let filled = body.setting(member.split(separator: ".", omittingEmptySubsequences: false)[...], to: .string(placeholder))
        let text = String(decoding: try JSONValue.object(filled).encoded(), as: UTF8.self)
            .replacingOccurrences(of: "\"\(placeholder)\"", with: value.json)
        return try await client.execute(uri: dialect.path, method: dialect.method, headers: jsonHeaders(headers), body: ByteBuffer(string: text))
    }

    /// A 2xx or a 4xx, with a JSON object as its body (none for 204); never a 5xx.
    static func expectAnswered(_ response: TestResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let code = response.status.code
        #expect((200..<300).contains(code) || (400..<500).contains(code), "\(what): \(response.status) \(text(of: response))",
            sourceLocation: sourceLocation)
        guard code != 204 else { return }
        let contentType = response.headers[.contentType] ?? ""
        #expect(contentType.hasPrefix("application/json") || contentType.hasPrefix("application/problem+json"),
            "\(what): content type \(contentType)", sourceLocation: sourceLocation)
        #expect((try? JSONValue.decode(Data(response.body.readableBytesView)))?.objectValue != nil, "\(what): body \(text(of: response))",
            sourceLocation: sourceLocation)
    }

    private static func text(of response: TestResponse) -> String {
        String(String(decoding: response.body.readableBytesView, as: UTF8.self).prefix(300))
    }

    private static func jsonHeaders(_ headers: HTTPFields) -> HTTPFields {
        var fields = headers
        fields[.contentType] = "application/json"
        return fields
    }

    /// A server with the dialect's push-service double, limits that a few hundred requests don't reach, and a device
    /// registered for the dialect (with an API token of every scope).
    static func withServer(
        for dialect: BoundaryDialect,
        _ test: @escaping @Sendable (any TestClientProtocol, BoundaryDialect.Credentials, TestClock) async throws -> Void
    ) async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_812_800))
        let now = Int(clock.now().timeIntervalSince1970)
        func run(_ server: TestServer) async throws {
            var server = server
            server.configuration.registrationsPerMinute = 100_000
            try await server.run { client in
                let registered = try await client.post("/api/push/register", dialect.registration)
                #expect(registered.status == .created)
                let json = try registered.json()
                let owner = Registration(
                    userID: try #require(json["user_id"]?.stringValue), secret: try #require(json["device_secret"]?.stringValue))
                let token = try await client.createToken(for: owner, scopes: nil)
                let credentials = BoundaryDialect.Credentials(
                    userID: owner.userID, basic: owner.basic, bearer: [.authorization: "Bearer \(token.token)"], now: now)
                try await test(client, credentials, clock)
            }
        }
        switch dialect.backend {
        case .apns:
            let apns = try await APNsTestServer.start(dailyLimit: 100_000, clock: clock)
            try await run(apns.server)
            try await apns.shutdown()
        case .fcm:
            let fcm = try await FCMTestServer.start(dailyLimit: 100_000, clock: clock)
            try await run(fcm.server)
            try await fcm.shutdown()
        }
    }
}
