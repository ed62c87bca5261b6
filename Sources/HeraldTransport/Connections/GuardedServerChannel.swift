import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Wraps Hummingbird's HTTP/1 + WebSocket child channel and puts a ``ConnectionGuard`` at the front of every
/// connection's pipeline and an ``HTTPExchangeObserver`` right after its HTTP decoder.
package struct GuardedServerChannel<Base: ServerChildChannel>: ServerChildChannel {
    package typealias Value = Base.Value

    let base: Base
    let limits: ConnectionLimits
    let connections: OpenConnections
    let refusals: ConnectionRefusals
    /// Whether a request head is a WebSocket handshake for the server's WebSocket endpoint (it then needs a slot).
    let isWebSocketHandshake: @Sendable (HTTPRequestHead) -> Bool

    package init(
        base: Base, limits: ConnectionLimits, connections: OpenConnections, refusals: ConnectionRefusals,
        isWebSocketHandshake: @escaping @Sendable (HTTPRequestHead) -> Bool
    ) {
        self.base = base
        self.limits = limits
        self.connections = connections
        self.refusals = refusals
        self.isWebSocketHandshake = isWebSocketHandshake
    }

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let connection = ConnectionGuard(limits: limits, connections: connections, refusals: refusals)
            try pipeline.addHandler(connection, position: .first)
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let observer = HTTPExchangeObserver(
                connection: connection, refusals: refusals, isWebSocketHandshake: isWebSocketHandshake)
            try pipeline.addHandler(observer, position: .after(decoder))
            return value
        }
    }

    package func handle(value: Value, logger: Logger) async {
        // Hummingbird logs a connection that closed before its first request was read (what this guard does to idle
        // and malformed connections) as an error; below debug level that would let any client fill the log.
        var connectionLogger = logger
        if logger.logLevel > .debug { connectionLogger.logLevel = .critical }
        await base.handle(value: value, logger: connectionLogger)
    }
}
