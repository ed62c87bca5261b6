import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 29, items 6 and 7: a cap on one address's connections, connection slots WebSockets cannot take, WebSockets
/// that never subscribe are closed, subscribes are rate-limited per socket, and an HTTP/1.1 request needs `Host`.
/// All over real sockets.
@Suite("Connection caps")
struct ConnectionCapTests {
    static let healthRequest = "GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n"

    /// Opens keep-alive connections that each ask for `/healthz` until one is refused (at most `attempts`); returns
    /// the ones answered 200 (still open) and the refusal.
    static func holdConnections(port: Int, attempts: Int) async throws -> (held: [RawConnection], refusal: RawAnswer?) {
        var held: [RawConnection] = []
        for _ in 0..<attempts {
            let connection = try RawConnection(port: port)
            connection.send(healthRequest)
            let answer = try #require(RawAnswer.all(in: Array(await connection.read(until: "}").utf8)).first)
            guard answer.status == 200 else {
                #expect(await connection.readUntilClosed().closed)
                return (held, answer)
            }
            held.append(connection)
        }
        return (held, nil)
    }

    @Test("Connections from one address over its cap are answered 429 and closed; a freed one is used again")
    func oneAddressCannotHoldMoreThanItsCap() async throws {
        var server = try ConnectionHardeningTests.server(timeouts: .seconds(60))
        server.configuration.connectionLimits.maximumConnectionsPerAddress = 3
        try await server.run { client in
            let port = try #require(client.port)
            // The test client (same address) may hold one of the three itself.
            var (held, refusal) = try await Self.holdConnections(port: port, attempts: 4)
            let answer = try #require(refusal, "four connections from one address were accepted under a cap of three")
            #expect((2...3).contains(held.count))
            #expect(answer.status == 429)
            #expect(answer.headers["retry-after"] != nil)
            #expect(answer.headers["connection"] == "close")
            let body = try #require(try JSONValue.decode(Data(answer.body.utf8)).objectValue)
            #expect(body["code"] == "too_many_connections_from_address")
            #expect(body["error"]?.stringValue?.contains("this address") == true)
            // The held connections still work.
            #expect(held[0].send(Self.healthRequest))
            #expect(await held[0].read(until: "}").contains("200 OK"))
            held.removeAll()  // closes them
            // Once the server has seen the closes, the address has slots again.
            var statuses: [Int] = []
            while statuses.last == nil || statuses.last == 429, statuses.count < 100 {
                if !statuses.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
                let connection = try RawConnection(port: port)
                connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
                statuses.append(RawAnswer.all(in: await connection.readUntilClosed().bytes).first?.status ?? 0)
            }
            #expect(statuses.last == 200, "\(statuses)")
        }
    }

    @Test("WebSockets cannot take the connection slots kept for plain HTTP")
    func webSocketsLeaveTheLastSlotsToHTTP() async throws {
        var server = try ConnectionHardeningTests.server(maximumConnections: 6, timeouts: .seconds(60))
        server.configuration.connectionLimits.connectionsReservedForHTTP = 3
        server.configuration.webSocketSubscribeTimeout = .seconds(300)
        try await server.run { client in
            let port = try #require(client.port)
            var sockets: [RawConnection] = []
            var refusal: RawAnswer?
            for _ in 0..<4 {
                let connection = try RawConnection(port: port)
                connection.send(
                    "GET /api/push/websocket HTTP/1.1\r\nHost: herald\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                let head = await connection.read(until: "\r\n\r\n")
                if head.hasPrefix("HTTP/1.1 101") {
                    sockets.append(connection)
                } else {
                    let (rest, closed) = await connection.readUntilClosed()
                    #expect(closed)
                    refusal = RawAnswer.all(in: Array(head.utf8) + rest).first
                    break
                }
            }
            #expect(sockets.count == 3)
            let answer = try #require(refusal, "a fourth WebSocket took a slot kept for plain HTTP")
            #expect(answer.status == 503)
            #expect(answer.headers["retry-after"] != nil)
            #expect(answer.body.contains("too_many_connections"))
            #expect(answer.body.contains("plain HTTP"))
            // Plain HTTP still gets its slots.
            let statuses = try await ConnectionHardeningTests.healthUntilAnswered(port: port)
            #expect(statuses == [200], "\(statuses)")
            // A closed WebSocket frees its slot for the next.
            sockets.removeFirst()
            var upgraded = false
            for _ in 0..<100 where !upgraded {
                if let peer = try? await SilentWebSocketPeer(port: port) {
                    upgraded = true
                    sockets.append(peer.connection)
                } else {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(upgraded)
        }
    }

    @Test("A WebSocket that has not subscribed in time is closed with 1008; a subscribed one stays")
    func webSocketsThatNeverSubscribeAreClosed() async throws {
        var server = try ConnectionHardeningTests.server(timeouts: .seconds(60))
        server.configuration.webSocketSubscribeTimeout = .seconds(2)  // the subscribed peer subscribes right after its 101
        try await server.run { client in
            let (subscribed, _) = try await SilentWebSocketPeer.subscribedToNewDevice(on: client)
            let idle = try await ConnectionHardeningTests.webSocket(port: try #require(client.port))
            let (bytes, closed) = await idle.readUntilClosed(within: 30)
            #expect(closed, "the idle WebSocket is still open")
            #expect(ConnectionHardeningTests.closeCode(in: bytes) == 1008)
            // The subscribed socket (as old as the idle one, or older) is still answered.
            subscribed.sendText(#"{"id": 9, "type": "hello"}"#)
            #expect(await subscribed.read(until: "unknown_command").contains(#""id":9"#))
        }
    }

    @Test("Repeated subscribes on one socket are answered too_many_subscribes after a burst, without a credential check")
    func repeatedSubscribesAreRateLimited() async throws {
        let server = try TestServer()
        try await server.run { client in
            let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
            let owner = Registration(
                userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
            let socket = WebSocketTestClient(port: try #require(client.port))
            for id in 1...5 { await socket.subscribe(owner, id: id, confirm: false) }
            // The sixth is refused before its credentials are looked at: a wrong secret would otherwise close the socket.
            socket.send(#"{"id": 6, "type": "push_notification_channel", "user_id": "\#(owner.userID)", "device_secret": "wrong"}"#)
            let refused = try #require(await socket.next())
            #expect(refused["id"] == 6)
            #expect(refused["success"] == false)
            #expect(refused["error"]?.objectValue?["code"] == "too_many_subscribes")
            // The socket keeps its subscription: a notification still arrives on it.
            #expect(try await client.notify(owner.userID).status == .created)
            let event = try #require(await socket.next())
            #expect(event["type"] == "event")
            #expect(event["id"] == 5)
            // Ten seconds later one more subscribe is allowed (six a minute).
            server.clock.advance(by: 10)
            await socket.subscribe(owner, id: 7, confirm: false)
            await socket.close()
        }
    }

    @Test("An HTTP/1.1 request without Host is answered 400 and the connection closes; HTTP/1.0 needs none")
    func http11RequestsNeedAHost() async throws {
        try await ConnectionHardeningTests.server(timeouts: .seconds(60)).run { client in
            let port = try #require(client.port)
            let connection = try RawConnection(port: port)
            connection.send("GET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n")
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            let answers = RawAnswer.all(in: received)
            #expect(answers.map(\.status) == [400])  // the request after it is not answered
            #expect(answers.first?.headers["connection"] == "close")
            let body = try #require(try JSONValue.decode(Data((answers.first?.body ?? "").utf8)).objectValue)
            #expect(body["code"] == "malformed_http")
            #expect(body["error"]?.stringValue?.contains("Host header") == true)
            // A WebSocket handshake without Host is not upgraded either.
            let handshake = try RawConnection(port: port)
            handshake.send(
                "GET /api/push/websocket HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(RawAnswer.all(in: await handshake.readUntilClosed().bytes).map(\.status) == [400])

            let old = try RawConnection(port: port)
            old.send("GET /healthz HTTP/1.0\r\n\r\n")
            #expect(RawAnswer.all(in: Array(await old.read(until: "}").utf8)).map(\.status) == [200])
        }
    }
}
