import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client made of a bare TCP socket: it does the upgrade handshake, sends one text frame, and then
/// never reads or answers anything again — a client that vanished without closing (phone out of Wi-Fi range).
final class SilentWebSocketPeer {
    private let descriptor: Int32

    init(port: Int, path: String = "/api/push/websocket") throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw PeerError(message: "connect failed") }
        try write(Array(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let answer = try readSome()
        guard answer.contains("101") else { throw PeerError(message: "no upgrade: \(answer)") }
    }

    /// Sends one masked text frame (client frames must be masked), up to 65,535 bytes.
    func sendText(_ text: String) throws {
        let payload = Array(text.utf8)
        guard payload.count <= UInt16.max else { throw PeerError(message: "frame too long") }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var frame: [UInt8] =
            payload.count < 126
            ? [0x81, 0x80 | UInt8(payload.count)]
            : [0x81, 0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    /// Reads what has arrived (blocking until something does).
    func readSome() throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { throw PeerError(message: "connection closed") }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    deinit { close(descriptor) }

    private func write(_ bytes: [UInt8]) throws {
        guard send(descriptor, bytes, bytes.count, 0) == bytes.count else { throw PeerError(message: "send failed") }
    }

    struct PeerError: Error { var message: String }
}
