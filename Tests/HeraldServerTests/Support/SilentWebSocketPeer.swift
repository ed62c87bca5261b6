import Foundation
import HeraldCore
import HummingbirdTesting
import Testing

/// A WebSocket client made of a bare TCP socket (``RawConnection``): it does the upgrade handshake and then sends
/// only what the test writes, and never answers a ping — a client that vanished without closing (phone out of Wi-Fi
/// range), or one that breaks the protocol on purpose.
final class SilentWebSocketPeer: Sendable {
    let connection: RawConnection

    init(port: Int, path: String = "/api/push/websocket") async throws {
        connection = try RawConnection(port: port)
        connection.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let answer = await connection.read(until: "\r\n\r\n")
        guard answer.hasPrefix("HTTP/1.1 101") else { throw RawConnectionError(message: "no upgrade: \(answer)") }
    }

    /// Sends one masked text frame (client frames must be masked).
    func sendText(_ text: String) {
        connection.send(Self.maskedTextFrame(Array(text.utf8)))
    }

    /// Reads until `marker` has arrived (or 30 s pass); returns what arrived.
    func read(until marker: String) async -> String {
        await connection.read(until: marker)
    }

    /// A final text frame carrying `payload` (up to 65,535 bytes), masked as a client must.
    static func maskedTextFrame(_ payload: [UInt8]) -> [UInt8] {
        maskedFrame(opcode: 0x1, payload)
    }

    /// A frame with `opcode` (1 text, 0 continuation, 8 close, 9 ping, 10 pong) carrying `payload` (up to 65,535
    /// bytes), masked as a client must; `fin: false` for a fragment that more follow.
    static func maskedFrame(opcode: UInt8, fin: Bool = true, _ payload: [UInt8]) -> [UInt8] {
        precondition(payload.count <= UInt16.max, "frame too long for this peer")
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let length: [UInt8] =
            payload.count < 126
            ? [0x80 | UInt8(payload.count)] : [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        return [(fin ? 0x80 : 0) | opcode] + length + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }
}

/// A frame the server sent (unmasked), read off a raw connection.
struct ServerFrame: Equatable {
    var opcode: UInt8
    var fin: Bool
    var payload: [UInt8]

    /// The complete frames at the start of `bytes`, in order.
    static func all(in bytes: [UInt8]) -> [ServerFrame] {
        var frames: [ServerFrame] = []
        var rest = bytes[...]
        while rest.count >= 2 {
            let start = rest.startIndex
            var length = Int(rest[start + 1] & 0x7F)
            guard length != 127 else { break }  // 64-bit lengths: not sent in these tests
            var headerLength = 2
            if length == 126 {
                guard rest.count >= 4 else { break }
                length = Int(rest[start + 2]) << 8 | Int(rest[start + 3])
                headerLength = 4
            }
            guard rest.count >= headerLength + length else { break }
            let payload = Array(rest[(start + headerLength)..<(start + headerLength + length)])
            frames.append(ServerFrame(opcode: rest[start] & 0x0F, fin: rest[start] & 0x80 != 0, payload: payload))
            rest = rest.dropFirst(headerLength + length)
        }
        return frames
    }

    /// The status code of a close frame.
    var closeCode: Int? {
        guard opcode == 0x8, payload.count >= 2 else { return nil }
        return Int(payload[0]) << 8 | Int(payload[1])
    }
}

extension SilentWebSocketPeer {
    /// Registers a WebSocket-only device and subscribes a silent peer to it (without confirmations); returns the
    /// peer, once the subscription's answer has arrived, and the device's USER_ID.
    static func subscribedToNewDevice(on client: any TestClientProtocol) async throws -> (
        peer: SilentWebSocketPeer, userID: String
    ) {
        let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
        let userID = try #require(registered["user_id"]?.stringValue)
        let secret = try #require(registered["device_secret"]?.stringValue)
        let peer = try await SilentWebSocketPeer(port: try #require(client.port))
        peer.sendText(#"{"id":1,"type":"push_notification_channel","user_id":"\#(userID)","device_secret":"\#(secret)"}"#)
        #expect(await peer.read(until: #""success":true"#).contains(#""success":true"#))
        return (peer, userID)
    }
}
