import Foundation
import HTTPTypes
import HeraldCore
import HeraldTransport
import NIOCore

/// A complete HTTP/1.1 answer with Herald's JSON error body, written as raw bytes when the connection is about to
/// close and no response is in progress.
enum CannedAnswer {
    /// `code`'s status, with `message` (or the code's own sentence) in the JSON error body and `Connection: close`.
    static func make(_ code: ErrorCode, message: String? = nil, extraHeaders: String = "") -> ByteBuffer {
        let status = code.status ?? .badRequest
        let text = message ?? code.defaultMessage ?? status.reasonPhrase
        let body = (try? JSONValue.object(["error": .string(text), "code": .string(code.rawValue)]).encoded()) ?? Data()
        let head =
            "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\(extraHeaders)\r\n"
        var answer = ByteBuffer(string: head)
        answer.writeBytes(body)
        return answer
    }
}

extension ConnectionRefusals {
    /// Herald's refusals outside any route, in its standard error shape with their ``ErrorCode``s.
    static let herald = ConnectionRefusals(
        tooManyConnections: CannedAnswer.make(.tooManyConnections, extraHeaders: "Retry-After: 1\r\n"),
        tooManyConnectionsFromAddress: CannedAnswer.make(.tooManyConnectionsFromAddress, extraHeaders: "Retry-After: 1\r\n"),
        noWebSocketSlot: CannedAnswer.make(
            .tooManyConnections,
            message: "Herald keeps its remaining connections for plain HTTP requests: no WebSocket can open now; try again shortly.",
            extraHeaders: "Retry-After: 10\r\n"),
        missingHost: CannedAnswer.make(
            .malformedHTTP, message: "An HTTP/1.1 request must carry a Host header (RFC 9112 §3.2); the connection is closed."),
        requestTimeout: { message in CannedAnswer.make(.requestTimeout, message: message) },
        malformedHTTP: { description in
            CannedAnswer.make(
                .malformedHTTP, message: "The request is not valid HTTP/1.1 (\(description)); the connection is closed.")
        })
}

extension OpenConnections {
    /// Counts connections per client address as Herald's limits do: by ``IPAddress/clientKey`` (an IPv4 address or an
    /// IPv6 /64), a peer in `trustedProxies` (`HERALD_TRUSTED_PROXIES`) and a peer that is not an IP socket not at all.
    convenience init(trustedProxies: [IPNetwork] = []) {
        self.init(addressKey: { peer in
            guard let address = peer.flatMap(IPAddress.init), !trustedProxies.contains(where: { $0.contains(address) }) else {
                return nil
            }
            return address.clientKey
        })
    }
}
