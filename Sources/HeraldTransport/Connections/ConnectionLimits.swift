import NIOCore
import Synchronization

/// The limits every client connection lives under, whatever the client does (docs/operations.md, "Security").
public struct ConnectionLimits: Sendable {
    /// From the connection opening, or from the first byte of a later request, to the end of the request's head.
    public var headerTimeout: Duration = .seconds(10)
    /// From the end of a request's head to the end of its body.
    public var bodyTimeout: Duration = .seconds(30)
    /// How long a keep-alive connection may sit between requests before it is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// Open connections at most, WebSockets included; one more is answered 503 and closed.
    public var maximumConnections = 10_000
    /// Open connections at most from one client address (an IPv4 address, or an IPv6 /64), WebSockets included; one
    /// more is answered 429 and closed. 0: no limit. A trusted proxy's connections are not counted per address (its
    /// clients' addresses are only known from each request's header).
    public var maximumConnectionsPerAddress = 256
    /// Connections that only plain HTTP may take: WebSockets may hold at most ``maximumConnections`` minus this
    /// many, so that idle sockets cannot shut out senders, `/healthz` and registrations. `nil`: a tenth of
    /// ``maximumConnections``.
    public var connectionsReservedForHTTP: Int?
    /// After a graceful shutdown begins: how long connections may take to finish what they are doing.
    public var shutdownTimeout: Duration = .seconds(10)
    /// After Herald closes its side: how long unread input is drained before the socket is closed, so that the
    /// client reads the last answer instead of a reset.
    public var linger: Duration = .seconds(2)

    public init() {}

    /// The most WebSockets open at once: ``maximumConnections`` less the connections kept for plain HTTP (at least 0).
    package var maximumWebSockets: Int {
        max(0, maximumConnections - (connectionsReservedForHTTP ?? maximumConnections / 10))
    }
}

/// The open client connections of one server, shared by every connection's ``ConnectionGuard``: how many in all, how
/// many are WebSockets, and how many each client address holds.
package final class OpenConnections: Sendable {
    private let count = Atomic<Int>(0)
    private let webSockets = Atomic<Int>(0)
    private let perAddress = Mutex<[String: Int]>([:])
    private let addressKeyOfPeer: @Sendable (SocketAddress?) -> String?

    /// `addressKey` says which key a connection from a peer is counted under per address (`nil`: not counted per
    /// address); the server's rule (an IPv4 address or an IPv6 /64, trusted proxies not at all) is its own.
    package init(addressKey: @escaping @Sendable (SocketAddress?) -> String? = { _ in nil }) {
        self.addressKeyOfPeer = addressKey
    }

    /// The key a connection from `peer` is counted under per address; `nil` when it is not counted per address.
    package func addressKey(of peer: SocketAddress?) -> String? {
        addressKeyOfPeer(peer)
    }

    /// Counts a new connection; false when it is one too many (it is still counted until ``closed()``).
    package func opened(limit: Int) -> Bool {
        count.wrappingAdd(1, ordering: .relaxed).newValue <= limit
    }

    package func closed() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Counts a new connection of `key`; false when `key` already holds `limit` (then it is not counted). A `limit`
    /// of 0 is no limit.
    package func opened(address key: String, limit: Int) -> Bool {
        perAddress.withLock { counts in
            let open = counts[key, default: 0]
            guard limit == 0 || open < limit else { return false }
            counts[key] = open + 1
            return true
        }
    }

    /// A connection counted under `key` closed.
    package func closed(address key: String) {
        perAddress.withLock { counts in
            let open = counts[key, default: 1] - 1
            counts[key] = open > 0 ? open : nil
        }
    }

    /// Takes a WebSocket slot; false when `limit` are taken (then none is).
    package func openedWebSocket(limit: Int) -> Bool {
        guard webSockets.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            webSockets.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    package func closedWebSocket() {
        webSockets.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Connections counted under `key` (for tests).
    package func openConnections(address key: String) -> Int {
        perAddress.withLock { $0[key, default: 0] }
    }
}
