import Foundation
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// RFC 6455 as Herald's WebSocket session speaks it (``WebSocketSession``), over bare TCP sockets: fragments, control
/// frames, the close handshake, pings, and what the HTTP side does with handshakes it does not upgrade.
@Suite("WebSocket protocol")
struct WebSocketProtocolTests {
    @Test("A message in fragments, with a ping between them, is answered; the ping gets its pong")
    func fragmentsAndAPingBetweenThem() async throws {
        try await TestServer().run { client in
            let peer = try await SilentWebSocketPeer(port: try #require(client.port))
            let message = Array(#"{"id": 41, "type": "launch_rockets"}"#.utf8)
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x1, fin: false, Array(message[0..<10])))
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x9, Array("are you there".utf8)))
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x0, fin: false, Array(message[10..<20])))
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x0, Array(message[20...])))
            let frames = ServerFrame.all(in: await peer.connection.readBytes(until: "unknown_command", within: 10))
            #expect(frames.first == ServerFrame(opcode: 0xA, fin: true, payload: Array("are you there".utf8)))
            let answer = try #require(frames.last)
            #expect(answer.opcode == 0x1)
            let json = try JSONValue.decode(Data(answer.payload)).objectValue
            #expect(json?["id"] == 41)
            #expect(json?["error"]?.objectValue?["code"] == "unknown_command")
        }
    }

    @Test("Fragments that add up to more than 16 KB close the socket with 1009")
    func aMessageOverTheLimitInFragments() async throws {
        try await TestServer().run { client in
            let peer = try await SilentWebSocketPeer(port: try #require(client.port))
            let piece = [UInt8](repeating: 0x20, count: 10_000)
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x1, fin: false, piece))
            peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0x0, piece))
            let (received, closed) = await peer.connection.readUntilClosed()
            #expect(closed)
            #expect(ServerFrame.all(in: received).first?.closeCode == 1009)
        }
    }

    @Test(
        "A client's close frame is answered and the connection closes",
        arguments: [
            (code: 1000, reason: "bye", answer: 1000),
            (code: 4001, reason: "", answer: 1000),  // 3000–4999: libraries' and applications' own codes
            (code: 1005, reason: "", answer: 1002),  // "no status": never sent on the wire
        ])
    func closeHandshake(code: Int, reason: String, answer: Int) async throws {
        try await TestServer().run { client in
            let peer = try await SilentWebSocketPeer(port: try #require(client.port))
            peer.connection.send(
                SilentWebSocketPeer.maskedFrame(opcode: 0x8, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)))
            let (received, closed) = await peer.connection.readUntilClosed()
            #expect(closed)
            #expect(ServerFrame.all(in: received).map(\.closeCode) == [answer])
        }
    }

    @Test(
        "Frames out of order close the socket with 1002",
        arguments: [
            [UInt8](SilentWebSocketPeer.maskedFrame(opcode: 0x0, Array("{}".utf8))),  // a continuation of nothing
            SilentWebSocketPeer.maskedFrame(opcode: 0x1, fin: false, Array("{".utf8))
                + SilentWebSocketPeer.maskedFrame(opcode: 0x1, Array("}".utf8)),  // a new message before the last ended
            SilentWebSocketPeer.maskedFrame(opcode: 0x3, Array("{}".utf8)),  // a reserved opcode
        ])
    func framesOutOfOrder(bytes: [UInt8]) async throws {
        try await TestServer().run { client in
            let peer = try await SilentWebSocketPeer(port: try #require(client.port))
            peer.connection.send(bytes)
            let (received, closed) = await peer.connection.readUntilClosed()
            #expect(closed)
            #expect(ServerFrame.all(in: received).first?.closeCode == 1002)
        }
    }

    @Test("A client that answers the server's pings stays subscribed")
    func answeredPingsKeepTheSocket() async throws {
        var server = try TestServer()
        // 2 s, not 1: under the full suite's load the peer's reads fell more than two 1 s intervals behind once (a
        // clean-clone CI run), and the server rightly dropped it as silent.
        // 5 s, not 2: a fresh-clone run beside a release build once answered a ping more than two intervals late.
        server.configuration.webSocketPingInterval = .seconds(5)
        server.configuration.deliveryWait = APNsTestServer.outcomeWait
        try await server.run { client in
            let (peer, userID) = try await SilentWebSocketPeer.subscribedToNewDevice(on: client)
            // Each ping answered with its own payload (a silent peer is dropped after two intervals): four intervals,
            // then a notification, pings still answered until its event has arrived.
            var pongs = 0
            var closed = false
            var received: [UInt8] = []  // every byte since the subscription's answer: a read may end inside a frame
            var sent: Task<JSONValue?, any Error>?
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline, !closed, !ServerFrame.all(in: received).contains(where: { $0.opcode == 0x1 }) {
                let (more, closedNow) = await peer.connection.readUntilClosed(within: 0.1)
                (received, closed) = (received + more, closedNow)
                for ping in ServerFrame.all(in: received).filter({ $0.opcode == 0x9 }).dropFirst(pongs) {
                    peer.connection.send(SilentWebSocketPeer.maskedFrame(opcode: 0xA, ping.payload))
                    pongs += 1
                }
                if pongs >= 4, sent == nil { sent = Task { try await client.notify(userID).json()["status"] } }
            }
            #expect(!closed)
            #expect(pongs >= 4)
            #expect(try await sent?.value == "delivered")
            let event = try #require(ServerFrame.all(in: received).first { $0.opcode == 0x1 })
            #expect(try JSONValue.decode(Data(event.payload)).objectValue?["type"] == "event")
        }
    }

    @Test(
        "A first request that asks for an upgrade Herald does not make is answered by the router",
        arguments: [
            // A WebSocket handshake at another path: 404, and the connection closes.
            (request: handshake(path: "/api/push/websocketx", keepAlive: false), status: 404, code: "not_found", closes: true),
            // A broken handshake (no Sec-WebSocket-Key) at the WebSocket path: 426, and the connection closes.
            (
                request: "GET /api/push/websocket HTTP/1.1\r\nHost: herald\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
                status: 426, code: "upgrade_required", closes: true
            ),
            // Another protocol: answered in HTTP/1.1 on a connection that stays open.
            (
                request:
                    "GET /api/push/websocketx HTTP/1.1\r\nHost: herald\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    + "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
                status: 404, code: "not_found", closes: false
            ),
        ])
    func upgradesNotMade(request: String, status: Int, code: String, closes: Bool) async throws {
        try await TestServer().run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send(request)
            // The answer, then the close; a connection that stays open is given half a second to close after it.
            var (received, closed) =
                closes ? await connection.readUntilClosed() : (await connection.readBytes(until: code), false)
            if !closes { closed = await connection.readUntilClosed(within: 0.5).closed }
            #expect(closed == closes)
            let answer = try #require(RawAnswer.all(in: received).first)
            #expect(answer.status == status)
            #expect(try JSONValue.decode(Data(answer.body.utf8)).objectValue?["code"] == .string(code))
        }
    }

    @Test("A handshake after a request on a kept-alive connection is sent to a new connection (307)")
    func aLateHandshakeIsRedirected() async throws {
        try await TestServer().run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send(
                "GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n"
                    + Self.handshake(path: "/api/push/websocket?app=1", keepAlive: true))
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            let answers = RawAnswer.all(in: received)
            #expect(answers.map(\.status) == [200, 307])
            #expect(answers.last?.headers["location"] == "/api/push/websocket?app=1")
            #expect(answers.last?.headers["connection"] == "close")
        }
    }

    @Test("Graceful shutdown closes a socket that never subscribed with 1001")
    func shutdownClosesAnUnsubscribedSocket() async throws {
        let peer = try await TestServer().run { client in
            try await SilentWebSocketPeer(port: try #require(client.port))
        }
        let (received, closed) = await peer.connection.readUntilClosed(within: 20)
        #expect(closed)
        #expect(ServerFrame.all(in: received).first?.closeCode == 1001)
    }

    static func handshake(path: String, keepAlive: Bool) -> String {
        "GET \(path) HTTP/1.1\r\nHost: herald\r\nUpgrade: websocket\r\nConnection: \(keepAlive ? "keep-alive, " : "")Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    }
}
