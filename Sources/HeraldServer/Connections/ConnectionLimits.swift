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
    /// After a graceful shutdown begins: how long connections may take to finish what they are doing.
    public var shutdownTimeout: Duration = .seconds(10)
    /// After Herald closes its side: how long unread input is drained before the socket is closed, so that the
    /// client reads the last answer instead of a reset.
    public var linger: Duration = .seconds(2)

    public init() {}
}

/// The number of open client connections of one server, shared by every connection's ``ConnectionGuard``.
final class OpenConnections: Sendable {
    private let count = Atomic<Int>(0)

    /// Counts a new connection; false when it is one too many (it is still counted until ``closed()``).
    func opened(limit: Int) -> Bool {
        count.wrappingAdd(1, ordering: .relaxed).newValue <= limit
    }

    func closed() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }
}
