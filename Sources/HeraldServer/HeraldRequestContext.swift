import Hummingbird
import NIOCore

/// The request context of every Herald route: Hummingbird's core context and the client's address (for the
/// authentication-failure limiter). WebSocket upgrades do not go through a router (``WebSocketController``).
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The socket peer, when the channel knows it (behind a reverse proxy, the proxy's; ``ClientAddressResolver``
    /// finds the client's).
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
