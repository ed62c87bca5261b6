import NIOCore
import NIOHTTP1

/// Sits right after the HTTP decoder and tells the connection's ``ConnectionGuard`` where requests and responses
/// begin and end. It also answers what the decoder cannot parse: `400` with a JSON body, then the connection closes
/// (the decoder cannot find the next request in a stream it could not parse). After a WebSocket upgrade (`101`) it
/// leaves the pipeline.
final class HTTPExchangeObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: ConnectionGuard
    private var sawParserError = false
    private var hasUpgraded = false

    init(connection: ConnectionGuard) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !hasUpgraded else {
            context.fireChannelRead(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head: connection.requestHeadReceived()
        case .body: break
        case .end: connection.requestEnded()
        }
        context.fireChannelRead(data)
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
        connection.refuseAfterCurrentResponse(
            CannedAnswer.make(
                .malformedHTTP,
                message: "The request is not valid HTTP/1.1 (\(parserError.debugDescription)); the connection is closed."))
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
