import Foundation
import HTTPTypes
import HeraldCore
import NIOCore

/// The first handler of every client connection: it sees the raw bytes and decides when the connection ends, so that
/// no client can hold one open for ever.
///
/// - A request's head must arrive within ``ConnectionLimits/headerTimeout`` (from the connection opening, or from the
///   first byte of a later request), its body within ``ConnectionLimits/bodyTimeout``; otherwise the client gets
///   `408` and the connection is closed. Between requests a connection may sit idle for
///   ``ConnectionLimits/idleTimeout``.
/// - One connection over ``ConnectionLimits/maximumConnections`` is answered `503` and closed; one over
///   ``ConnectionLimits/maximumConnectionsPerAddress`` from the same client address (IPv6: /64) `429`. A WebSocket
///   handshake beyond ``ConnectionLimits/maximumWebSockets`` is answered `503` (the last slots are kept for plain HTTP).
/// - Every close is graceful: Herald closes its side, drains what the client still sends for
///   ``ConnectionLimits/linger`` (so the client reads the answer rather than a reset), then closes the socket.
///   A response sent before its request was read to the end (`413`) closes the connection that way.
/// - On graceful shutdown, idle connections close at once and busy ones within ``ConnectionLimits/shutdownTimeout``.
/// - After a WebSocket upgrade, HTTP timeouts stop (pings take over) and a client frame without a mask closes the
///   connection with status 1002 (RFC 6455 §5.1).
///
/// It learns where requests and responses begin and end from ``HTTPExchangeObserver``, which sits after the HTTP
/// decoder; both are installed by ``GuardedServerChannel``.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Mode {
        case http
        case webSocket(WebSocketMaskCheck)
        /// Herald has closed its side; input is drained until the linger deadline.
        case closing
    }

    private let limits: ConnectionLimits
    private let connections: OpenConnections
    private var mode = Mode.http
    private var isCounted = false
    /// The key this connection is counted under per client address, once counted.
    private var countedAddress: String?
    /// This connection holds one of the WebSocket slots.
    private var holdsWebSocketSlot = false
    private var isQuiescing = false
    /// A request head has arrived on this connection (before that, the header timeout runs from the connection opening).
    private var hasSeenRequest = false

    /// Requests whose head arrived and whose response has not ended.
    private var unansweredRequests = 0
    private var isReadingRequest = false
    private var isResponding = false
    /// Bytes of a new request arrived while the connection was idle.
    private var requestBegan = false
    /// An answer to write once the response in progress has ended, then close.
    private var pendingRefusal: ByteBuffer?

    private var phaseDeadline: NIODeadline
    private var shutdownDeadline: NIODeadline?
    private var lingerDeadline: NIODeadline?
    private var timer: Scheduled<Void>?
    /// This handler's place in the pipeline: raw bytes written here go straight to the socket.
    private var ownContext: ChannelHandlerContext?
    private var timerDeadline: NIODeadline?

    init(limits: ConnectionLimits, connections: OpenConnections) {
        self.limits = limits
        self.connections = connections
        phaseDeadline = .now() + TimeAmount(limits.headerTimeout)
    }

    // MARK: Channel events

    func channelActive(context: ChannelHandlerContext) {
        isCounted = true
        let address = connections.addressKey(of: context.channel.remoteAddress)
        if !connections.opened(limit: limits.maximumConnections) {
            refuse(context, CannedAnswer.make(.tooManyConnections, extraHeaders: "Retry-After: 1\r\n"))
        } else if let address, !connections.opened(address: address, limit: limits.maximumConnectionsPerAddress) {
            refuse(context, CannedAnswer.make(.tooManyConnectionsFromAddress, extraHeaders: "Retry-After: 1\r\n"))
        } else {
            countedAddress = address
            phaseDeadline = .now() + TimeAmount(limits.headerTimeout)
            rearm(context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if isCounted {
            isCounted = false
            connections.closed()
        }
        if let address = countedAddress {
            countedAddress = nil
            connections.closed(address: address)
        }
        if holdsWebSocketSlot {
            holdsWebSocketSlot = false
            connections.closedWebSocket()
        }
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        ownContext = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ownContext = nil
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch mode {
        case .closing:
            return  // drained
        case .webSocket(var check):
            let frames = unwrapInboundIn(data)
            guard check.scan(frames) else {
                mode = .webSocket(check)
                closeWebSocketForProtocolError(context)
                return
            }
            mode = .webSocket(check)
        case .http:
            if unansweredRequests == 0, !isReadingRequest, !requestBegan {
                requestBegan = true
                phaseDeadline = .now() + TimeAmount(limits.headerTimeout)
                rearm(context)
            }
        }
        context.fireChannelRead(data)
    }

    func close(context: ChannelHandlerContext, mode closeMode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: closeMode, promise: promise)
        if closeMode == .output { startLingering(context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !isQuiescing {
            isQuiescing = true
            shutdownDeadline = .now() + TimeAmount(limits.shutdownTimeout)
            if case .http = mode, isIdle {
                context.close(promise: nil)
            } else {
                rearm(context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Reports from HTTPExchangeObserver

    func requestHeadReceived() {
        guard let context = ownContext else { return }
        hasSeenRequest = true
        unansweredRequests += 1
        isReadingRequest = true
        requestBegan = false
        phaseDeadline = .now() + TimeAmount(limits.bodyTimeout)
        rearm(context)
    }

    func requestEnded() {
        guard let context = ownContext else { return }
        isReadingRequest = false
        rearm(context)
    }

    /// Whether the response now starting is the connection's last (its head then says `Connection: close`).
    func responseStarting() -> Bool {
        isResponding = true
        return isQuiescing || isReadingRequest || pendingRefusal != nil
    }

    func responseEnded() {
        guard let context = ownContext else { return }
        isResponding = false
        unansweredRequests = max(0, unansweredRequests - 1)
        if let refusal = pendingRefusal {
            if unansweredRequests == 0 || isReadingRequest {
                pendingRefusal = nil
                refuse(context, refusal)
            }
        } else if isReadingRequest || isQuiescing && isIdle {
            closeGracefully(context)
        } else {
            if isIdle { phaseDeadline = .now() + TimeAmount(limits.idleTimeout) }
            rearm(context)
        }
    }

    /// Whether the WebSocket handshake whose head just arrived may upgrade the connection: it takes a WebSocket slot
    /// if one is free. Only a connection's first request is upgraded (a later one is redirected), so a later one
    /// needs none.
    func mayUpgradeToWebSocket() -> Bool {
        guard !hasSeenRequest, !holdsWebSocketSlot else { return true }
        guard connections.openedWebSocket(limit: limits.maximumWebSockets) else { return false }
        holdsWebSocketSlot = true
        return true
    }

    func upgradedToWebSocket() {
        guard let context = ownContext else { return }
        mode = .webSocket(WebSocketMaskCheck())
        unansweredRequests = 0
        isReadingRequest = false
        isResponding = false
        rearm(context)
    }

    /// Answers with `answer` once the requests read in full are answered, and closes the connection.
    func refuseAfterCurrentResponse(_ answer: ByteBuffer) {
        guard let context = ownContext else { return }
        // Requests read in full before the bad bytes are answered first; a request cut by them is not.
        if isResponding || unansweredRequests > 0 && !isReadingRequest {
            pendingRefusal = answer
        } else {
            refuse(context, answer)
        }
    }

    // MARK: Closing

    private var isIdle: Bool { unansweredRequests == 0 && !isReadingRequest && !requestBegan }

    private func refuse(_ context: ChannelHandlerContext, _ answer: ByteBuffer) {
        guard case .http = mode else { return }
        context.write(wrapOutboundOut(answer), promise: nil)
        closeGracefully(context)
    }

    private func closeWebSocketForProtocolError(_ context: ChannelHandlerContext) {
        // A close frame from the server (unmasked): opcode 8, status 1002 "protocol error".
        var frame = context.channel.allocator.buffer(capacity: 4)
        frame.writeBytes([0x88, 0x02, 0x03, 0xEA])
        context.write(wrapOutboundOut(frame), promise: nil)
        closeGracefully(context)
    }

    private func closeGracefully(_ context: ChannelHandlerContext) {
        if case .closing = mode { return }
        context.flush()
        context.close(mode: .output, promise: nil)
        startLingering(context)
    }

    private func startLingering(_ context: ChannelHandlerContext) {
        if case .closing = mode { return }
        mode = .closing
        lingerDeadline = .now() + TimeAmount(limits.linger)
        rearm(context)
    }

    // MARK: The one timer

    /// The deadline that applies now, and what happens when it passes.
    private var currentDeadline: (deadline: NIODeadline, onExpiry: Expiry)? {
        var current: (deadline: NIODeadline, onExpiry: Expiry)?
        switch mode {
        case .closing:
            current = lingerDeadline.map { ($0, .close) }
        case .webSocket:
            current = nil
        case .http:
            if isReadingRequest {
                current = (phaseDeadline, .requestTimeout("The request body did not arrive in time."))
            } else if unansweredRequests > 0 {
                current = nil
            } else if requestBegan || !hasSeenRequest {
                current = (phaseDeadline, .requestTimeout("The request head did not arrive in time."))
            } else {
                current = (phaseDeadline, .close)
            }
        }
        if let shutdownDeadline, current.map({ shutdownDeadline < $0.deadline }) ?? true {
            current = (shutdownDeadline, .close)
        }
        return current
    }

    private enum Expiry {
        case close
        case requestTimeout(String)
    }


    /// Makes sure the timer fires no later than the deadline that applies now. A timer due earlier is kept (when it
    /// fires, ``expire(_:)`` looks again and sets the next one), so a busy keep-alive connection costs about one
    /// scheduled task per body timeout rather than two per request.
    private func rearm(_ context: ChannelHandlerContext) {
        guard let (deadline, _) = currentDeadline else { return }
        if let scheduled = timerDeadline, timer != nil, scheduled <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = nil
            expire(context)
        }
    }

    private func expire(_ context: ChannelHandlerContext) {
        guard let (deadline, onExpiry) = currentDeadline else { return }
        guard deadline <= .now() else {
            rearm(context)
            return
        }
        switch onExpiry {
        case .close:
            context.close(promise: nil)
        case .requestTimeout(let message):
            if isResponding {
                context.close(promise: nil)
            } else {
                refuse(context, CannedAnswer.make(.requestTimeout, message: message))
            }
        }
    }
}

/// A complete HTTP/1.1 answer with Herald's JSON error body, written as raw bytes when the connection is about to
/// close and no response is in progress.
enum CannedAnswer {
    /// `code`'s status, with `message` (or the code's own sentence) in the JSON error body and `Connection: close`.
    static func make(_ code: ErrorCode, message: String? = nil, extraHeaders: String = "") -> ByteBuffer {
        let status = code.status ?? .badRequest
        let text = message ?? code.defaultMessage ?? status.reasonPhrase
        let body = (try? JSONValue.object(["error": .string(text), "code": .string(code.rawValue)]).encoded()) ?? Data()
        let head =
            "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\(extraHeaders)\r\n"
        var answer = ByteBuffer(string: head)
        answer.writeBytes(body)
        return answer
    }
}
