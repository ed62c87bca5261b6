import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of every Herald route: Hummingbird's core context, the client's address (for the
/// authentication-failure limiter) and the WebSocket upgrade handle (for `/api/push/websocket`).
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The socket peer, when the channel knows it (behind a reverse proxy, the proxy's; ``ClientAddressResolver``
    /// finds the client's).
    public let remoteAddress: SocketAddress?
    public let webSocket: WebSocketHandlerReference<Self>

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        webSocket = .init()
    }
}
