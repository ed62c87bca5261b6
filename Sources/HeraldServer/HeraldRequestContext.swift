import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of every Herald route: Hummingbird's core context, the client's address (for the
/// authentication-failure limiter) and the WebSocket upgrade handle (for `/api/push/websocket`).
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The address the request came from, when the channel knows it. Behind a reverse proxy this is the proxy's.
    public let remoteAddress: SocketAddress?
    public let webSocket: WebSocketHandlerReference<Self>

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        webSocket = .init()
    }
}
