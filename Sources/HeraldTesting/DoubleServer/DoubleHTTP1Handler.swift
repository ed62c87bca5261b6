import Foundation
import NIOCore
import NIOHTTP1

/// Handles the HTTP/1.1 exchanges of one connection of a double, one at a time, as ``DoubleStreamHandler`` handles
/// HTTP/2 streams: the request line and `host` become the pseudo-headers `:method`, `:path`, `:scheme`,
/// `:authority`, so the core reads both protocols alike. Streams and GOAWAY do not exist here: a GOAWAY answer
/// closes the connection, and a stalled exchange leaves it waiting, as an unanswered request on a real server would.
final class DoubleHTTP1Handler<Core: DoubleRequestHandling>: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let core: Core
    private let connectionID: Int
    private var head: HTTPRequestHead?
    private var body = Data()
    private var exchanges = 0

    init(core: Core, connectionID: Int) {
        self.core = core
        self.connectionID = connectionID
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = Data()
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            self.head = nil
            complete(head, context: context)
        }
    }

    private func complete(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        exchanges += 1
        var headers = [
            ReceivedHeader(name: ":method", value: head.method.rawValue),
            ReceivedHeader(name: ":scheme", value: "https"),
            ReceivedHeader(name: ":path", value: head.uri),
        ]
        if let host = head.headers.first(name: "host") { headers.append(ReceivedHeader(name: ":authority", value: host)) }
        headers += head.headers.filter { $0.name.lowercased() != "host" }.map {
            ReceivedHeader(name: $0.name.lowercased(), value: $0.value)
        }
        let action = core.handle(
            DoubleRequest(connectionID: connectionID, streamID: exchanges, headers: headers, body: body))
        switch action {
        case .respond(let response, _, let delay):
            let keepAlive = head.isKeepAlive
            if let delay, delay > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) {
                    self.write(response, keepAlive: keepAlive, context: context)
                }
            } else {
                write(response, keepAlive: keepAlive, context: context)
            }
        case .stall:
            break
        case .dropConnection:
            DoubleServer.dropConnection(context.channel)
        case .goAway:
            context.close(promise: nil)
        }
    }

    private func write(_ response: DoubleResponse, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(response.headers.filter { !$0.0.hasPrefix(":") })
        headers.replaceOrAdd(name: "content-length", value: String(response.body?.count ?? 0))
        if !keepAlive { headers.replaceOrAdd(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body = response.body {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        core.answerWritten(response)
    }
}
