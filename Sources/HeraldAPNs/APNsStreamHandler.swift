import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request on its own HTTP/2 stream: writes HEADERS and one DATA frame with END_STREAM when the stream becomes
/// active, reads the answer's HEADERS (`:status`, `apns-id`) and DATA until END_STREAM, and completes `answer`. The
/// stream closes by itself once both sides ended it; a reset, a closed connection or the deadline fail `answer`
/// (``APNsConnection/Failure``), and the deadline also resets the stream.
final class APNsStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let headers: HPACKHeaders
    private let body: ByteBuffer
    private let timeout: TimeAmount
    private let answer: EventLoopPromise<APNsConnection.Answer>
    private var status: Int?
    private var apnsID: String?
    private var answerBody: ByteBuffer?
    private var deadline: Scheduled<Void>?
    private var isDone = false

    init(headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount, answer: EventLoopPromise<APNsConnection.Answer>) {
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        let timeout = self.timeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.fail(.noAnswerWithin(timeout), context: context)
        }
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if status == nil, let value = frame.headers.first(name: ":status") {
                status = Int(value)
                apnsID = frame.headers.first(name: "apns-id")
            }
            if frame.endStream { finish(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data {
                if (answerBody?.readableBytes ?? 0) + buffer.readableBytes > APNsConnection.maximumAnswerBody {
                    fail(.answerTooLarge, context: context)
                    return
                }
                if answerBody == nil { answerBody = buffer } else { answerBody!.writeBuffer(&buffer) }
            }
            if frame.endStream { finish(context: context) }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.streamClosedBeforeAnswer, context: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isDone else { return }
        isDone = true
        cancelDeadline()
        answer.fail(error)
        context.close(promise: nil)
    }

    private func finish(context: ChannelHandlerContext) {
        guard !isDone else { return }
        guard let status else {
            fail(.answerWithoutStatus, context: context)
            return
        }
        isDone = true
        cancelDeadline()
        answer.succeed(APNsConnection.Answer(status: status, apnsID: apnsID, body: answerBody ?? ByteBuffer()))
    }

    /// Cancels the deadline and lets go of it (it refers to this handler).
    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    /// Fails the answer once; with a context, also resets the stream (closing a stream channel that is still open).
    private func fail(_ failure: APNsConnection.Failure, context: ChannelHandlerContext?) {
        guard !isDone else { return }
        isDone = true
        cancelDeadline()
        answer.fail(failure)
        context?.close(promise: nil)
    }
}
