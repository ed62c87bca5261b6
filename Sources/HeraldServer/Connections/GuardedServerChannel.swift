import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Wraps Hummingbird's HTTP/1 + WebSocket child channel and puts a ``ConnectionGuard`` at the front of every
/// connection's pipeline and an ``HTTPExchangeObserver`` right after its HTTP decoder.
struct GuardedServerChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let limits: ConnectionLimits
    let connections: OpenConnections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let connection = ConnectionGuard(limits: limits, connections: connections)
            try pipeline.addHandler(connection, position: .first)
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(HTTPExchangeObserver(connection: connection), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        // Hummingbird logs a connection that closed before its first request was read (what this guard does to idle
        // and malformed connections) as an error; below debug level that would let any client fill the log.
        var connectionLogger = logger
        if logger.logLevel > .debug { connectionLogger.logLevel = .critical }
        await base.handle(value: value, logger: connectionLogger)
    }
}
