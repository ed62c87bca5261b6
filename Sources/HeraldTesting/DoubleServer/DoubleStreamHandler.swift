import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Handles one HTTP/2 stream of a double: collects the request, asks the core what to do, does it.
final class DoubleStreamHandler<Core: DoubleRequestHandling>: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let core: Core
    private let connectionID: Int
    private var headers: [ReceivedHeader] = []
    private var body = Data()
    private var isComplete = false
    private var isCounted = false

    init(core: Core, connectionID: Int) {
        self.core = core
        self.connectionID = connectionID
    }

    func handlerAdded(context: ChannelHandlerContext) {
        isCounted = true
        core.streamOpened(on: connectionID)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard isCounted else { return }
        isCounted = false
        core.streamClosed(on: connectionID)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handlerRemoved(context: context)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if headers.isEmpty {
                headers = frame.headers.map {
                    ReceivedHeader(name: $0.name, value: $0.value, indexed: $0.indexable == .indexable)
                }
            }
            if frame.endStream { complete(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body.append(contentsOf: buffer.readableBytesView) }
            if frame.endStream { complete(context: context) }
        default:
            break
        }
    }

    private func complete(context: ChannelHandlerContext) {
        guard !isComplete else { return }
        isComplete = true
        let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)).map { Int($0) } ?? 0
        let action = core.handle(
            DoubleRequest(connectionID: connectionID, streamID: streamID, headers: headers, body: body))
        switch action {
        case .respond(let response, let raiseStreamsTo, let delay):
            if let raiseStreamsTo { raiseMaxConcurrentStreams(to: raiseStreamsTo, context: context) }
            if let delay, delay > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) {
                    self.write(response, context: context)
                }
            } else {
                write(response, context: context)
            }
        case .stall(let raiseStreamsTo):
            if let raiseStreamsTo { raiseMaxConcurrentStreams(to: raiseStreamsTo, context: context) }
        case .dropConnection:
            if let connection = context.channel.parent {
                DoubleServer.dropConnection(connection)
            } else {
                context.close(promise: nil)
            }
        case .goAway(let lastStreamID, let debugData):
            goAway(lastStreamID: lastStreamID, debugData: debugData, context: context)
        }
    }

    private func write(_ response: DoubleResponse, context: ChannelHandlerContext) {
        let headerFrame = HTTP2Frame.FramePayload.Headers(
            headers: HPACKHeaders(response.headers), endStream: response.body == nil)
        context.write(wrapOutboundOut(.headers(headerFrame)), promise: nil)
        if let body = response.body {
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
        context.flush()
        core.answerWritten(response)
    }

    private func raiseMaxConcurrentStreams(to value: Int, context: ChannelHandlerContext) {
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: value)])))
        context.channel.parent?.writeAndFlush(settings, promise: nil)
    }

    private func goAway(lastStreamID: Int, debugData: Data, context: ChannelHandlerContext) {
        guard let connection = context.channel.parent else { return }
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(
                lastStreamID: HTTP2StreamID(lastStreamID), errorCode: .noError,
                opaqueData: connection.allocator.buffer(bytes: debugData)))
        connection.writeAndFlush(frame).whenComplete { _ in connection.close(promise: nil) }
    }
}
