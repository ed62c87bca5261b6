import HTTPTypes
import HeraldTransport
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// A client connection: HTTP/1.1 answered by Hummingbird's responder, or, for a WebSocket handshake at
/// `/api/push/websocket`, a ``WebSocketSession`` after NIO's upgrade.
///
/// It is hummingbird-websocket's `HTTP1WebSocketUpgradeChannel` with one difference: an upgraded socket is a channel
/// handler, not a Swift task running WSCore's handler (an idle subscribed socket kept 18 KB of task stacks there;
/// docs/performance.md, "WebSocket memory"). A first request that asks for a WebSocket and is not upgraded is
/// answered by the router, 404 (another path) or 426 (a broken handshake), and the connection closes
/// (``UpgradeRequestFilter``).
struct HTTPWithWebSocketChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        /// The connection is a WebSocket now; its session runs on the event loop.
        case webSocket
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let webSocket: WebSocketController
    let http1 = HTTP1Channel.Configuration()

    init(responder: @escaping HTTPChannelHandler.Responder, webSocket: WebSocketController) {
        self.responder = Self.redirectingLateUpgrades(responder)
        self.webSocket = webSocket
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let webSocket = self.webSocket
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: WebSocketController.maximumMessageSize,
                shouldUpgrade: { channel, head in
                    channel.eventLoop.makeSucceededFuture(Self.isHandshake(head) ? [:] : nil)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            webSocket.session(for: Self.request(head), channel: channel))
                        return .webSocket
                    }
                })
            let http1 = self.http1
            let upgrades = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandlers(http1.additionalChannelHandlers())
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        return .http(
                            try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)))
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: upgrades)
            configuration.enablePipelining = false  // NIOAsyncChannel reads one request at a time
            configuration.enableErrorHandling = false  // Hummingbird (and ConnectionGuard) answer parser errors
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validated them
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(UpgradeRequestFilter(), position: .after(decoder))
            return Value(upgradeResult: result, channel: channel)
        }
    }

    /// Serves the connection's HTTP requests; an upgraded connection needs no task (its session is on the event loop,
    /// and graceful shutdown reaches it as `ChannelShouldQuiesceEvent`).
    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .http(let http1): await handleHTTP(asyncChannel: http1, logger: logger)
            case .webSocket: logger.debug("WebSocket upgrade")
            }
        } catch {
            logger.debug("Connection ended before its first request", metadata: ["error": "\(error)"])
        }
    }

    /// Whether the head is a WebSocket handshake for Herald's endpoint (``WebSocketController/isHandshake(method:target:values:)``).
    static func isHandshake(_ head: HTTPRequestHead) -> Bool {
        WebSocketController.isHandshake(method: head.method.rawValue, target: head.uri) { head.headers[$0] }
    }

    /// The request of a handshake (the client's address for the credential throttle comes from its headers).
    private static func request(_ head: HTTPRequestHead) -> HTTPRequest {
        (try? HTTPRequest(head, secure: false, splitCookie: false))
            ?? HTTPRequest(method: .get, scheme: nil, authority: nil, path: nil)
    }

    /// NIO upgrades only the first request of a connection. A later request on a kept-alive connection with a valid
    /// handshake for the WebSocket is answered 307 to the same target with `Connection: close`, so that the client
    /// asks again on a new connection (as hummingbird-websocket does); anything else goes to the router.
    private static func redirectingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder)
        -> HTTPChannelHandler.Responder
    {
        struct ClosingAfterRedirect: Error {}
        return { request, writer, channel in
            let isHandshake = WebSocketController.isHandshake(method: request.method.rawValue, target: request.head.path) {
                name in HTTPField.Name(name).map { request.headers[values: $0] } ?? []
            }
            guard isHandshake else {
                return try await responder(request, writer, channel)
            }
            var target = request.uri.path
            if let query = request.uri.query { target += "?\(query)" }
            try await writer.writeResponse(
                HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: target]))
            throw ClosingAfterRedirect()
        }
    }
}

/// Lets only a valid WebSocket handshake at `/api/push/websocket` reach NIO's upgrade handler, which keeps the head of
/// a request that asks for an upgrade it does not make from the HTTP side (the router would see a request without a
/// head, and the connection would close without an answer). Any other first request that asks for an upgrade goes on
/// without its `Upgrade` header, to be answered by the router: a WebSocket handshake at another path 404, a broken
/// one at this path 426, both with the connection closed after the answer (the client meant to leave HTTP on it);
/// another protocol (`h2c`) is answered in HTTP/1.1, as RFC 9110 allows. Leaves the pipeline after the first head.
private final class UpgradeRequestFilter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        defer { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        guard head.headers.contains(name: "upgrade"), !HTTPWithWebSocketChannel.isHandshake(head) else {
            return context.fireChannelRead(data)
        }
        if head.headers["upgrade"].contains(where: { $0.lowercased() == "websocket" }) {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        head.headers.remove(name: "upgrade")
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }
}
