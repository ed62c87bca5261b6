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
/// decoder; both are installed by ``GuardedServerChannel``. What the connection is doing and which deadline applies is
/// ``ConnectionState``, a value with no channel (unit-tested on its own); this handler feeds it the channel's events
/// and carries out what it says: write, close, set the one timer. What a refusal reads is the server's
/// (``ConnectionRefusals``).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limits: ConnectionLimits
    private let connections: OpenConnections
    private let refusals: ConnectionRefusals
    private var state: ConnectionState
    private var isCounted = false
    /// The key this connection is counted under per client address, once counted.
    private var countedAddress: String?

    private var timer: Scheduled<Void>?
    /// This handler's place in the pipeline: raw bytes written here go straight to the socket.
    private var ownContext: ChannelHandlerContext?
    private var timerDeadline: NIODeadline?

    init(limits: ConnectionLimits, connections: OpenConnections, refusals: ConnectionRefusals) {
        self.limits = limits
        self.connections = connections
        self.refusals = refusals
        state = ConnectionState(limits: limits, now: .now())
    }

    // MARK: Channel events

    func channelActive(context: ChannelHandlerContext) {
        isCounted = true
        let address = connections.addressKey(of: context.channel.remoteAddress)
        var refusal: ByteBuffer?
        if !connections.opened(limit: limits.maximumConnections) {
            refusal = refusals.tooManyConnections
        } else if let address, !connections.opened(address: address, limit: limits.maximumConnectionsPerAddress) {
            refusal = refusals.tooManyConnectionsFromAddress
        } else {
            countedAddress = address
        }
        perform(state.activated(refusal: refusal, now: .now()), context)
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
        if state.holdsWebSocketSlot {
            state.releasedWebSocketSlot()
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
        let (forward, effect) = state.bytesReceived(unwrapInboundIn(data), now: .now())
        perform(effect, context)
        if forward { context.fireChannelRead(data) }
    }

    func close(context: ChannelHandlerContext, mode closeMode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: closeMode, promise: promise)
        if closeMode == .output { perform(state.outputClosed(now: .now()), context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { perform(state.quiesce(now: .now()), context) }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Reports from HTTPExchangeObserver

    func requestHeadReceived() {
        guard let context = ownContext else { return }
        perform(state.requestHeadReceived(now: .now()), context)
    }

    func requestEnded() {
        guard let context = ownContext else { return }
        perform(state.requestEnded(), context)
    }

    /// Whether the response now starting is the connection's last (its head then says `Connection: close`).
    func responseStarting() -> Bool {
        state.responseStarting()
    }

    func responseEnded() {
        guard let context = ownContext else { return }
        perform(state.responseEnded(now: .now()), context)
    }

    /// Whether the WebSocket handshake whose head just arrived may upgrade the connection: it takes a WebSocket slot
    /// if one is free. Only a connection's first request is upgraded (a later one is redirected), so a later one
    /// needs none.
    func mayUpgradeToWebSocket() -> Bool {
        guard state.needsWebSocketSlot else { return true }
        guard connections.openedWebSocket(limit: limits.maximumWebSockets) else { return false }
        state.tookWebSocketSlot()
        return true
    }

    func upgradedToWebSocket() {
        guard let context = ownContext else { return }
        perform(state.upgradedToWebSocket(), context)
    }

    /// Answers with `answer` once the requests read in full are answered, and closes the connection.
    func refuseAfterCurrentResponse(_ answer: ByteBuffer) {
        guard let context = ownContext else { return }
        perform(state.refuseAfterCurrentResponse(answer, now: .now()), context)
    }

    // MARK: Carrying out what the state says

    private func perform(_ effect: ConnectionState.Effect, _ context: ChannelHandlerContext) {
        switch effect {
        case .none:
            break
        case .rearm:
            rearm(context)
        case .close:
            context.close(promise: nil)
        case .closeOutput(let answer):
            if let answer { context.write(wrapOutboundOut(answer), promise: nil) }
            context.flush()
            context.close(mode: .output, promise: nil)
            rearm(context)
        case .answerRequestTimeout(let message):
            perform(state.refuse(refusals.requestTimeout(message), now: .now()), context)
        }
    }

    /// Makes sure the timer fires no later than the deadline that applies now. A timer due earlier is kept (when it
    /// fires, the state looks again and the next one is set), so a busy keep-alive connection costs about one
    /// scheduled task per body timeout rather than two per request.
    private func rearm(_ context: ChannelHandlerContext) {
        guard let (deadline, _) = state.currentDeadline else { return }
        if let scheduled = timerDeadline, timer != nil, scheduled <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = nil
            perform(state.timerFired(now: .now()), context)
        }
    }
}
