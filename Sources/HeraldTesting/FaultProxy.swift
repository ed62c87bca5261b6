import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on 127.0.0.1 that tests put between Herald and a server it depends on (PostgreSQL), to break the link
/// without touching the server, which other tests share: it forwards, refuses new connections (a stopped server),
/// drops the open ones (a restart or a crash), or freezes (a `SIGSTOP`ped server: every connection stays open, and
/// nothing is read on either side until it thaws, so the bytes wait in the kernel's buffers as they would).
///
/// ```swift
/// let proxy = try await FaultProxy.start(upstreamHost: "127.0.0.1", upstreamPort: 5432)
/// proxy.set(.freeze)          // requests hang on the database
/// proxy.set(.forward)         // and go on where they stopped
/// proxy.set(.refuse); proxy.dropConnections()  // the database is down
/// ```
public final class FaultProxy: Sendable {
    public enum Mode: Sendable, Equatable {
        /// Bytes pass both ways.
        case forward
        /// New connections are closed as soon as they are accepted; open ones are left as they are.
        case refuse
        /// Nothing is read on either side of any connection, open or new; nothing is closed.
        case freeze
    }

    private struct Link {
        var client: any Channel
        var server: any Channel
    }

    private struct State {
        var mode = Mode.forward
        var links: [ObjectIdentifier: Link] = [:]
        /// Connections accepted since the start, refused ones included.
        var accepted = 0
    }

    /// The port to connect to instead of the upstream's.
    public let port: Int
    private let listener: any Channel
    private let state = Mutex(State())

    private init(port: Int, listener: any Channel) {
        self.port = port
        self.listener = listener
    }

    /// Listens on an ephemeral port of 127.0.0.1 and forwards to `upstreamHost:upstreamPort`.
    public static func start(upstreamHost: String, upstreamPort: Int) async throws -> FaultProxy {
        let box = ProxyBox()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { client in
                guard let proxy = box.proxy.withLock({ $0 }) else { return client.close() }
                return proxy.accepted(client, upstreamHost: upstreamHost, upstreamPort: upstreamPort)
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw FaultProxyError.noPort
        }
        let proxy = FaultProxy(port: port, listener: listener)
        box.proxy.withLock { $0 = proxy }
        return proxy
    }

    /// The mode from now on; `.forward` thaws frozen connections, `.freeze` freezes the open ones too.
    public func set(_ mode: Mode) {
        let links = state.withLock { state in
            state.mode = mode
            return Array(state.links.values)
        }
        let reads = mode != .freeze
        for link in links {
            link.client.setOption(.autoRead, value: reads).whenFailure { _ in }
            link.server.setOption(.autoRead, value: reads).whenFailure { _ in }
        }
    }

    public var mode: Mode { state.withLock { $0.mode } }

    /// Closes every open connection, both sides (the client sees its connection reset by the server's end).
    public func dropConnections() {
        let links = state.withLock { Array($0.links.values) }
        for link in links {
            link.client.close(promise: nil)
            link.server.close(promise: nil)
        }
    }

    /// Connections open through the proxy now.
    public var openConnections: Int { state.withLock { $0.links.count } }

    /// Connections accepted since the start, refused ones included.
    public var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        dropConnections()
        try await listener.close()
    }

    private func accepted(_ client: any Channel, upstreamHost: String, upstreamPort: Int) -> EventLoopFuture<Void> {
        let refuse = state.withLock { state in
            state.accepted += 1
            return state.mode == .refuse
        }
        if refuse { return client.close() }
        return ClientBootstrap(group: client.eventLoop)
            .channelOption(.autoRead, value: false)
            .channelInitializer { server in
                server.eventLoop.makeCompletedFuture {
                    try server.pipeline.syncOperations.addHandler(Forwarder(partner: client))
                }
            }
            .connect(host: upstreamHost, port: upstreamPort)
            .flatMapThrowing { server in
                // Both channels are on the client's event loop.
                try client.pipeline.syncOperations.addHandler(Forwarder(partner: server))
                return server
            }
            .flatMap { server in
                let (key, reads) = self.state.withLock { state in
                    let key = ObjectIdentifier(client)
                    state.links[key] = Link(client: client, server: server)
                    return (key, state.mode != .freeze)
                }
                client.closeFuture.whenComplete { _ in
                    server.close(promise: nil)
                    _ = self.state.withLock { $0.links.removeValue(forKey: key) }
                }
                server.closeFuture.whenComplete { _ in client.close(promise: nil) }
                guard reads else { return client.eventLoop.makeSucceededVoidFuture() }
                return client.setOption(.autoRead, value: true).and(server.setOption(.autoRead, value: true)).map { _ in }
            }
            .flatMapErrorThrowing { error in
                client.close(promise: nil)
                throw error
            }
    }
}

public enum FaultProxyError: Error {
    case noPort
}

/// The proxy, once listening, for the connections the listener accepts.
private final class ProxyBox: Sendable {
    let proxy = Mutex<FaultProxy?>(nil)
}

/// Writes what one side reads to the other side.
private final class Forwarder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let partner: (any Channel)?

    init(partner: (any Channel)?) {
        self.partner = partner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
