import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// One WebSocket connection after the upgrade, run as a channel handler on its event loop: RFC 6455's control frames
/// (ping, pong and the close handshake), messages put together from their frames, a ping every `pingInterval`, and
/// the client's messages handed one at a time to its ``WebSocketMessageHandler``.
///
/// hummingbird-websocket runs a socket as nested Swift tasks (the connection, the upgrade, WSCore's handler, its
/// inbound iterator, its ping loop), whose stack slabs held 18 KB of every idle socket (docs/performance.md,
/// "WebSocket memory"). Here an idle socket is this object, its ping timer and NIO's channel; a task runs only while
/// a message is being answered. NIO's `WebSocketFrameDecoder` and `WebSocketFrameEncoder` read and write the frames,
/// and its `WebSocketProtocolErrorHandler` closes the socket on a frame they refuse (1002, or 1009 for one over the
/// size limit).
package final class WebSocketSession<Handler: WebSocketMessageHandler>: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = WebSocketFrame
    package typealias OutboundIn = WebSocketFrame
    package typealias OutboundOut = WebSocketFrame
    package typealias Configuration = WebSocketSessionConfiguration

    private enum State {
        case open
        /// The server sent its close frame and waits for the client's.
        case closing
        case closed
    }

    private let controller: Handler
    /// The client's key for the credential throttle.
    private let client: String
    private let configuration: Configuration
    private let connection: WebSocketConnection
    private var context: ChannelHandlerContext!
    private var state = State.open
    /// The socket's subscription, once it has one.
    private var subscription: Handler.Subscription?
    /// The subscribe messages the socket may still send.
    private var subscribeBudget: SubscribeBudget
    /// Closes the socket if it has not subscribed by then; cancelled by the first subscription.
    private var subscribeDeadline: Scheduled<Void>?
    private var isPastSubscribeDeadline = false

    /// A text or binary message whose last frame has not arrived yet.
    private var unfinished: (opcode: WebSocketOpcode, data: ByteBuffer)?
    /// Messages waiting for the one being answered.
    private var waiting: [WebSocketMessage] = []
    private var isAnswering = false
    /// NIO asked to read while messages waited: reading resumes when they are answered.
    private var isReadHeld = false

    /// The payload of the last ping, until the client answers it.
    private var unansweredPing: UInt64?
    private var pinger: RepeatedTask?
    private var closeDeadline: Scheduled<Void>?

    package init(controller: Handler, client: String, configuration: Configuration, channel: any Channel) {
        self.controller = controller
        self.client = client
        self.configuration = configuration
        self.connection = WebSocketConnection(channel: channel)
        subscribeBudget = SubscribeBudget(perMinute: configuration.subscribesPerMinute)
    }

    // MARK: Channel events

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Added by the upgrade, to a channel that is already active.
        let session = NIOLoopBound(self, eventLoop: context.eventLoop)
        let interval = TimeAmount(configuration.pingInterval)
        pinger = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            session.value.ping()
        }
        subscribeDeadline = context.eventLoop.scheduleTask(in: TimeAmount(configuration.subscribeTimeout)) {
            session.value.subscribeDeadlinePassed()
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        pinger?.cancel()
        closeDeadline?.cancel()
        subscribeDeadline?.cancel()
        self.context = nil  // the context holds this handler
    }

    package func channelInactive(context: ChannelHandlerContext) {
        state = .closed
        connection.markClosed()
        pinger?.cancel()
        closeDeadline?.cancel()
        subscribeDeadline?.cancel()
        waiting = []
        unfinished = nil
        if let subscription { controller.ended(subscription) }
        context.fireChannelInactive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            receivedClose(frame)
        case .ping:
            guard frame.fin else { return close(.protocolError) }
            guard case .open = state else { return }
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            var data = frame.unmaskedData
            if let ping = unansweredPing, data.readableBytes == 8, data.readInteger(as: UInt64.self) == ping {
                unansweredPing = nil
            }
        case .text, .binary, .continuation:
            guard frame.reservedBits.isEmpty else { return close(.protocolError) }
            guard case .open = state else { return }
            assemble(frame)
        default:
            close(.protocolError)
        }
    }

    package func read(context: ChannelHandlerContext) {
        if isAnswering, case .open = state {
            isReadHeld = true
        } else {
            context.read()
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Graceful shutdown: the server asks every connection to finish.
        if event is ChannelShouldQuiesceEvent {
            close(.goingAway, reason: "Herald is shutting down")
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            // The client closed its side (the server allows half-closed connections for HTTP): nothing more can come,
            // and a socket that waited for the ping timeout would hold its connection slot for a minute.
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    package func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let request = event as? WebSocketCloseRequest else {
            return context.triggerUserOutboundEvent(event, promise: promise)
        }
        close(request.code, reason: request.reason, promise: promise)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        controller.logger.debug("WebSocket closed", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // MARK: Messages

    /// Puts text and binary messages together from their frames (control frames may come between them).
    private func assemble(_ frame: WebSocketFrame) {
        switch (frame.opcode, unfinished) {
        case (.text, nil), (.binary, nil):
            if frame.fin {
                finished(frame.opcode, frame.unmaskedData)
            } else {
                unfinished = (frame.opcode, frame.unmaskedData)
            }
        case (.continuation, (let opcode, var data)?):
            guard data.readableBytes + frame.length <= configuration.maximumMessageSize else {
                return close(.messageTooLarge)
            }
            var piece = frame.unmaskedData
            data.writeBuffer(&piece)
            if frame.fin {
                unfinished = nil
                finished(opcode, data)
            } else {
                unfinished = (opcode, data)
            }
        default:
            // A continuation with nothing to continue, or a new message before the last one ended.
            close(.protocolError)
        }
    }

    private func finished(_ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        guard opcode == .text else { return received(.binary(data)) }
        guard let text = String(validating: data.readableBytesView, as: UTF8.self) else {
            return close(.dataInconsistentWithMessage)
        }
        received(.text(text))
    }

    private func received(_ message: WebSocketMessage) {
        waiting.append(message)
        answerNext()
    }

    /// Hands the next waiting message to the controller, unless one is being answered: messages are answered in
    /// order, each seeing the subscription the one before left.
    private func answerNext() {
        guard !isAnswering, case .open = state, !waiting.isEmpty else { return }
        isAnswering = true
        let message = waiting.removeFirst()
        let (controller, client, connection, subscription) = (self.controller, self.client, self.connection, self.subscription)
        let budget = subscribeBudget
        let session = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask {
            var budget = budget
            let subscription = await controller.answer(
                message, subscription: subscription, budget: &budget, client: client, socket: connection)
            return (subscription, budget)
        }.whenSuccess { subscription, budget in
            session.value.answered(leaving: subscription, budget: budget)
        }
    }

    private func answered(leaving newSubscription: Handler.Subscription?, budget: SubscribeBudget) {
        isAnswering = false
        subscribeBudget = budget
        if case .closed = state {
            // The socket closed while the message was being answered, and ended the subscription it had then.
            if let newSubscription, newSubscription.id != subscription?.id { controller.ended(newSubscription) }
            return
        }
        subscription = newSubscription
        if newSubscription != nil {
            subscribeDeadline?.cancel()
            subscribeDeadline = nil
        }
        closeIfNeverSubscribed()
        answerNext()
        if !isAnswering, isReadHeld {
            isReadHeld = false
            context.read()
        }
    }

    // MARK: Ping and close

    private func subscribeDeadlinePassed() {
        subscribeDeadline = nil
        isPastSubscribeDeadline = true
        closeIfNeverSubscribed()
    }

    /// Closes a socket that has not subscribed by its deadline (a subscribe being answered then gets its answer
    /// first): an idle socket must not hold a connection slot.
    private func closeIfNeverSubscribed() {
        guard isPastSubscribeDeadline, subscription == nil, !isAnswering, case .open = state else { return }
        close(.policyViolation, reason: "No subscription within \(configuration.subscribeTimeout.components.seconds) s")
        context.close(promise: nil)
    }

    private func ping() {
        guard case .open = state else { return }
        guard unansweredPing == nil else {
            // The last ping is still unanswered: the client is gone (a phone that left the network says nothing).
            close(.goingAway, reason: "Ping timeout")
            context.close(promise: nil)
            return
        }
        let payload = UInt64.random(in: .min ... .max)
        unansweredPing = payload
        var data = context.channel.allocator.buffer(capacity: 8)
        data.writeInteger(payload)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: data)), promise: nil)
    }

    /// Starts the close handshake: sends a close frame and waits for the client's, at most `closeTimeout`.
    private func close(_ code: WebSocketErrorCode, reason: String? = nil, promise: EventLoopPromise<Void>? = nil) {
        guard case .open = state else {
            promise?.succeed()
            return
        }
        state = .closing
        connection.markClosed()
        pinger?.cancel()
        waiting = []
        if isReadHeld {
            // The client's close frame must still be read.
            isReadHeld = false
            context.read()
        }
        context.writeAndFlush(
            wrapOutboundOut(Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)), promise: promise)
        let channel = context.channel
        closeDeadline = context.eventLoop.scheduleTask(in: TimeAmount(configuration.closeTimeout)) { channel.close(promise: nil) }
    }

    private func receivedClose(_ frame: WebSocketFrame) {
        switch state {
        case .open:
            // The client closes: answer with a close frame (1000, or 1002 for a close frame RFC 6455 does not allow),
            // then close the connection, as the server does.
            state = .closing
            connection.markClosed()
            pinger?.cancel()
            let answer = Self.closeFrame(
                Self.answer(toClose: frame.unmaskedData), reason: nil, allocator: context.channel.allocator)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in channel.close(promise: nil) }
        case .closing:
            // The answer to the server's close frame.
            context.close(promise: nil)
        case .closed:
            break
        }
    }

    /// The code a server answers a client's close frame with: 1002 for a one-byte payload, a reason that is not
    /// UTF-8 or a code no endpoint may send; 1000 otherwise (codes 3000–4999 belong to libraries and applications).
    static func answer(toClose payload: ByteBuffer) -> WebSocketErrorCode {
        var payload = payload
        guard payload.readableBytes != 0 else { return .normalClosure }
        guard let code = payload.readWebSocketErrorCode() else { return .protocolError }
        if payload.readableBytes > 0, String(validating: payload.readableBytesView, as: UTF8.self) == nil {
            return .protocolError
        }
        if case .unknown(let number) = code, !(3000...4999).contains(number) { return .protocolError }
        return .normalClosure
    }

    static func closeFrame(_ code: WebSocketErrorCode, reason: String?, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var data = allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
        data.write(webSocketErrorCode: code)
        if let reason { data.writeString(reason) }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }
}
