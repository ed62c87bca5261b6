import Foundation

/// A WebSocket client made of a bare TCP socket (``RawConnection``): it does the upgrade handshake and then sends
/// only what the test writes, and never answers a ping — a client that vanished without closing (phone out of Wi-Fi
/// range), or one that breaks the protocol on purpose.
final class SilentWebSocketPeer {
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
        precondition(payload.count <= UInt16.max, "frame too long for this peer")
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let length: [UInt8] =
            payload.count < 126
            ? [0x80 | UInt8(payload.count)] : [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        return [0x81] + length + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }
}
