// Hand-written on purpose, with APNsConnection.swift: see the header there for the measured reason (scenario b2) and the
// AsyncHTTPClient change that would let Herald go back to the library.

import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS
import Synchronization

/// Requests handed to a connection from any thread, waiting to be written by its event loop. The loop takes all that
/// are waiting at once, so that requests arriving together go out in one flush (one TLS record, one system call).
final class APNsRequestQueue: Sendable {
    /// One request: the whole header block (pseudo-headers included), the body and how long to wait for the answer.
    struct Request: Sendable {
        var headers: HPACKHeaders
        var body: ByteBuffer
        var timeout: TimeAmount
        var answer: EventLoopPromise<APNsConnection.Answer>
    }

    private struct State {
        var waiting: [Request] = []
        var isDrainScheduled = false
    }

    private let state = Mutex(State())

    /// Queues a request; returns whether the caller must schedule a drain on the event loop (none is scheduled yet).
    func enqueue(_ request: Request) -> Bool {
        state.withLock { state in
            state.waiting.append(request)
            defer { state.isDrainScheduled = true }
            return !state.isDrainScheduled
        }
    }

    /// Everything waiting; the next ``enqueue(_:)`` schedules a new drain.
    func takeAll() -> [Request] {
        state.withLock { state in
            state.isDrainScheduled = false
            var taken: [Request] = []
            swap(&taken, &state.waiting)
            return taken
        }
    }
}

/// The connection's only handler after `NIOHTTP2Handler` (which runs without a stream multiplexer): it writes each
/// request as a HEADERS and a DATA frame on a stream id of its own, reads the answers' frames by stream id, and
/// completes each request's promise. No channel per stream; requests queued together share one flush.
///
/// It also completes the connection's `ready` promise (TLS negotiated `h2` and the server's first SETTINGS arrived),
/// marks the connection as going away on GOAWAY or close, returns the connection-level flow-control window as answer
/// bodies arrive, and resets streams whose deadline passed. Streams beyond the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` wait inside `NIOHTTP2Handler` until the server allows more.
final class APNsConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request on the wire, waiting for its answer.
    private struct OpenStream {
        var answer: EventLoopPromise<APNsConnection.Answer>
        var deadline: NIODeadline
        var timeout: TimeAmount
        var status: Int?
        var apnsID: String?
        var body: ByteBuffer?
    }

    /// The connection-level receive window of HTTP/2 (RFC 9113 §6.9.2); it is topped up when half is used.
    private static let connectionWindow = 65_535

    private let queue: APNsRequestQueue
    /// The connection this handler serves, set right after both are made; let go when the handler is removed.
    var connection: APNsConnection?
    private let ready: EventLoopPromise<APNsConnection>
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: OpenStream] = [:]
    private var nextStreamID: Int32 = 1
    private var hasNegotiatedHTTP2 = false
    private var isGoingAway = false
    private var isClosed = false
    private var deadlineCheck: (at: NIODeadline, task: Scheduled<Void>)?

    init(queue: APNsRequestQueue, ready: EventLoopPromise<APNsConnection>) {
        self.queue = queue
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failEverything()
        self.context = nil
        connection = nil
    }

    /// Writes every queued request on a fresh stream, then flushes once.
    func drain() {
        let requests = queue.takeAll()
        guard !requests.isEmpty else { return }
        guard let context, !isClosed, !isGoingAway else {
            for request in requests { request.answer.fail(APNsConnection.Failure.notAcceptingStreams) }
            return
        }
        let now = NIODeadline.now()
        var earliest = NIODeadline.distantFuture
        for request in requests {
            let id = HTTP2StreamID(nextStreamID)
            nextStreamID += 2
            let deadline = now + request.timeout
            earliest = min(earliest, deadline)
            streams[id] = OpenStream(answer: request.answer, deadline: deadline, timeout: request.timeout)
            let headers = HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))
            let body = HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))
            let written = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(headers), promise: written)
            context.write(wrapOutboundOut(body), promise: nil)
            // The HEADERS frame fails when the stream cannot be opened (GOAWAY came first, the connection closed).
            written.futureResult.assumeIsolated().whenFailure { error in self.fail(id, with: error) }
        }
        context.flush()
        scheduleDeadlineCheck(before: earliest)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard streams[frame.streamID] != nil else { return }
            if streams[frame.streamID]!.status == nil, let value = headers.headers.first(name: ":status") {
                streams[frame.streamID]!.status = Int(value)
                streams[frame.streamID]!.apnsID = headers.headers.first(name: "apns-id")
            }
            if headers.endStream { finish(frame.streamID) }
        case .data(let data):
            guard streams[frame.streamID] != nil else { return }
            if case .byteBuffer(var buffer) = data.data {
                let received = streams[frame.streamID]!.body?.readableBytes ?? 0
                guard received + buffer.readableBytes <= APNsConnection.maximumAnswerBody else {
                    fail(frame.streamID, with: APNsConnection.Failure.answerTooLarge, reset: true)
                    return
                }
                if received == 0 {
                    streams[frame.streamID]!.body = buffer
                } else {
                    streams[frame.streamID]!.body!.writeBuffer(&buffer)
                }
            }
            if data.endStream { finish(frame.streamID) }
        case .rstStream:
            fail(frame.streamID, with: APNsConnection.Failure.streamClosedBeforeAnswer)
        case .settings(.settings) where hasNegotiatedHTTP2:
            if let connection { ready.succeed(connection) }
        case .goAway:
            isGoingAway = true
            connection?.markGoingAway()
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            // Reset by the server, or closed by its GOAWAY before it was processed.
            fail(closed.streamID, with: APNsConnection.Failure.streamClosedBeforeAnswer)
        case let window as NIOHTTP2WindowUpdatedEvent where window.streamID == .rootStream:
            if let size = window.inboundWindowSize, size < Self.connectionWindow / 2 {
                let increment = Self.connectionWindow - size
                let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))
                context.writeAndFlush(wrapOutboundOut(update), promise: nil)
            }
        case let tls as TLSUserEvent:
            if case .handshakeCompleted(let negotiated) = tls {
                if negotiated == "h2" {
                    hasNegotiatedHTTP2 = true
                } else {
                    ready.fail(APNsConnection.Failure.notHTTP2(negotiated: negotiated))
                    context.close(promise: nil)
                }
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, with: streamError.baseError)  // that stream only; it is reset
            return
        }
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        connection?.markGoingAway()
        ready.fail(APNsConnection.Failure.closedBeforeReady)
        failEverything()
        context.fireChannelInactive()
    }

    // MARK: Answers

    private func finish(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        guard let status = stream.status else {
            stream.answer.fail(APNsConnection.Failure.answerWithoutStatus)
            return
        }
        stream.answer.succeed(APNsConnection.Answer(status: status, apnsID: stream.apnsID, body: stream.body ?? ByteBuffer()))
    }

    /// Fails one open stream's request, if it is still open here; `reset` also resets the stream.
    private func fail(_ id: HTTP2StreamID, with error: any Error, reset: Bool = false) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.answer.fail(error)
        if reset, let context {
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
    }

    /// Fails every open stream and every queued request (the connection closed).
    private func failEverything() {
        deadlineCheck?.task.cancel()
        deadlineCheck = nil
        let open = streams
        streams = [:]
        for stream in open.values { stream.answer.fail(APNsConnection.Failure.streamClosedBeforeAnswer) }
        for request in queue.takeAll() { request.answer.fail(APNsConnection.Failure.notAcceptingStreams) }
    }

    // MARK: Deadlines

    /// One timer per connection, at the earliest deadline of its open streams (not one per request).
    private func scheduleDeadlineCheck(before deadline: NIODeadline) {
        guard let context else { return }
        if let check = deadlineCheck {
            guard deadline < check.at else { return }
            check.task.cancel()
        }
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.checkDeadlines() }
        deadlineCheck = (deadline, task)
    }

    /// Fails and resets the streams whose deadline passed, then waits for the next deadline.
    private func checkDeadlines() {
        deadlineCheck = nil
        guard let context else { return }
        let now = NIODeadline.now()
        var next: NIODeadline?
        var expired: [(HTTP2StreamID, TimeAmount)] = []
        for (id, stream) in streams {
            if stream.deadline <= now {
                expired.append((id, stream.timeout))
            } else if next.map({ stream.deadline < $0 }) ?? true {
                next = stream.deadline
            }
        }
        for (id, timeout) in expired {
            guard let stream = streams.removeValue(forKey: id) else { continue }
            stream.answer.fail(APNsConnection.Failure.noAnswerWithin(timeout))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
        if !expired.isEmpty { context.flush() }
        if let next { scheduleDeadlineCheck(before: next) }
    }
}
