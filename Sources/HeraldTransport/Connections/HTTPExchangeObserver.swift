import NIOCore
import NIOHTTP1

/// Sits right after the HTTP decoder and tells the connection's ``ConnectionGuard`` where requests and responses
/// begin and end. It also answers what the decoder cannot parse: `400` with a JSON body, then the connection closes
/// (the decoder cannot find the next request in a stream it could not parse), and an HTTP/1.1 request without a `Host`
/// header (`400`, RFC 9112 §3.2, then the connection closes), and a WebSocket handshake when every WebSocket slot is
/// taken (`503`, ``ConnectionGuard/mayUpgradeToWebSocket()``). After a WebSocket upgrade (`101`) it leaves the pipeline.
final class HTTPExchangeObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: ConnectionGuard
    private let refusals: ConnectionRefusals
    /// Whether a request head is a WebSocket handshake for the server's WebSocket endpoint.
    private let isWebSocketHandshake: @Sendable (HTTPRequestHead) -> Bool
    private var sawParserError = false
    /// A request was refused here (no `Host`): the rest of the connection's input is dropped until it closes.
    private var isDiscarding = false
    private var hasUpgraded = false

    init(
        connection: ConnectionGuard, refusals: ConnectionRefusals,
        isWebSocketHandshake: @escaping @Sendable (HTTPRequestHead) -> Bool
    ) {
        self.connection = connection
        self.refusals = refusals
        self.isWebSocketHandshake = isWebSocketHandshake
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !hasUpgraded else {
            context.fireChannelRead(data)
            return
        }
        guard !isDiscarding else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Neither a refused request nor what follows it on the connection reaches the router.
            if head.version == .http1_1, !head.headers.contains(name: "host") {
                // RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without a Host header.
                return refuse(refusals.missingHost)
            }
            if isWebSocketHandshake(head), !connection.mayUpgradeToWebSocket() {
                return refuse(refusals.noWebSocketSlot)
            }
            connection.requestHeadReceived()
        case .body: break
        case .end: connection.requestEnded()
        }
        context.fireChannelRead(data)
    }

    /// Answers `answer` (after the answers to requests already read) and drops the rest of the connection's input.
    private func refuse(_ answer: ByteBuffer) {
        isDiscarding = true
        connection.refuseAfterCurrentResponse(answer)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Kept from the rest of the pipeline: the request handler then sees the connection close, and nothing
        // answers twice.
        guard !sawParserError else { return }
        sawParserError = true
        connection.refuseAfterCurrentResponse(refusals.malformedHTTP(parserError.debugDescription))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !hasUpgraded else {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            if head.status == .switchingProtocols {
                context.write(data, promise: promise)
                connection.upgradedToWebSocket()
                hasUpgraded = true  // leaves at the flush that follows
                return
            }
            if connection.responseStarting(), !head.headers.contains(name: "connection") {
                head.headers.replaceOrAdd(name: "connection", value: "close")
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            context.write(data, promise: promise)
            connection.responseEnded()
        }
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        if hasUpgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}
