import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP client for what no HTTP client library sends: half-sent heads, broken framing, bodies that stall,
/// sockets that are never closed. One task uses it at a time (a test hands it on, never shares it).
///
/// Reads never block a thread: the socket is read without waiting (`MSG_DONTWAIT`), and while nothing has arrived the
/// task sleeps for ``pollInterval``. Swift's pool has as many threads as the machine has cores (two in CI), and the
/// server under test runs its handlers on the same pool: a read that blocked its thread, even for 50 ms at a time,
/// held back every server in the test process while it waited.
final class RawConnection: @unchecked Sendable {
    /// How long a read sleeps when nothing has arrived.
    static let pollInterval = Duration.milliseconds(5)

    private let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RawConnectionError(message: "connect failed: errno \(errno)") }
    }

    deinit { Glibc.close(descriptor) }

    /// Sends `bytes`; false when the server no longer takes them (the connection was closed or reset).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the server closes the connection or `seconds` pass; `closed` says which.
    func readUntilClosed(within seconds: Double = 30) async -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                received += buffer[0..<count]
            } else if count == 0 || errno == ECONNRESET {
                return (received, true)
            } else {
                try? await Task.sleep(for: Self.pollInterval)
            }
        }
        return (received, false)
    }

    /// Reads until `bytes` received contain `marker` (or `seconds` pass).
    func read(until marker: String, within seconds: Double = 30) async -> String {
        String(decoding: await readBytes(until: marker, within: seconds), as: UTF8.self)
    }

    /// Reads until the bytes received contain `marker` as UTF-8 (or `seconds` pass, or the server closes).
    func readBytes(until marker: String, within seconds: Double = 30) async -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !String(decoding: received, as: UTF8.self).contains(marker) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                received += buffer[0..<count]
            } else if count == 0 {
                break
            } else {
                try? await Task.sleep(for: Self.pollInterval)
            }
        }
        return received
    }
}

struct RawConnectionError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// One HTTP/1.1 answer read off a raw connection.
struct RawAnswer {
    var status: Int
    var headers: [String: String]
    var body: String

    /// The answers in `bytes`, in order (bodies delimited by `Content-Length`).
    static func all(in bytes: [UInt8]) -> [RawAnswer] {
        var answers: [RawAnswer] = []
        var rest = Substring(String(decoding: bytes, as: UTF8.self))
        while let headEnd = rest.range(of: "\r\n\r\n") {
            let lines = rest[..<headEnd.lowerBound].components(separatedBy: "\r\n")
            guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
                let status = Int(statusLine.dropFirst(9).prefix(3))
            else { break }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let body = rest[headEnd.upperBound...].prefix(length)
            answers.append(RawAnswer(status: status, headers: headers, body: String(body)))
            rest = rest[headEnd.upperBound...].dropFirst(length)
        }
        return answers
    }
}
