import NIOCore

/// What a client connection is doing and which deadline applies to it, with no channel: ``ConnectionGuard`` feeds it
/// the connection's events with the time they happened and carries out the ``Effect`` each returns. Unit tests drive
/// it the same way, with times of their own (as Hummingbird's `HTTPConnectionStateHandler.StateMachine` is tested).
///
/// ```swift
/// var state = ConnectionState(limits: limits, now: .now())
/// perform(state.activated(now: .now()))       // .rearm: the header timeout runs
/// perform(state.requestHeadReceived(now: .now()))
/// if let (deadline, _) = state.currentDeadline { schedule(at: deadline) }
/// ```
struct ConnectionState {
    /// What the guard does after an event.
    enum Effect: Equatable {
        /// Nothing beyond setting the timer again.
        case rearm
        /// Writes `answer` (when there is one), flushes, closes Herald's side and lingers (``Mode/closing``).
        case closeOutput(answer: ByteBuffer?)
        /// Closes the connection now.
        case close
        /// The request timed out while none of its response was written: answer `message` (408) with ``refuse(_:now:)``.
        case answerRequestTimeout(message: String)
        /// Nothing at all.
        case none
    }

    /// What happens when the deadline that applies passes.
    enum Expiry: Equatable {
        case close
        case requestTimeout(String)
    }

    enum Mode {
        case http
        case webSocket(WebSocketMaskCheck)
        /// Herald has closed its side; input is drained until the linger deadline.
        case closing
    }

    /// A close frame from the server (unmasked): opcode 8, status 1002 "protocol error".
    static let webSocketProtocolErrorFrame = ByteBuffer(bytes: [0x88, 0x02, 0x03, 0xEA])

    private let limits: ConnectionLimits
    private(set) var mode = Mode.http
    private(set) var isQuiescing = false
    /// A request head has arrived on this connection (before that, the header timeout runs from the connection opening).
    private(set) var hasSeenRequest = false
    /// This connection holds one of the WebSocket slots.
    private(set) var holdsWebSocketSlot = false

    /// Requests whose head arrived and whose response has not ended.
    private(set) var unansweredRequests = 0
    private(set) var isReadingRequest = false
    private(set) var isResponding = false
    /// Bytes of a new request arrived while the connection was idle.
    private(set) var requestBegan = false
    /// An answer to write once the response in progress has ended, then close.
    private(set) var pendingRefusal: ByteBuffer?

    private var phaseDeadline: NIODeadline
    private var shutdownDeadline: NIODeadline?
    private var lingerDeadline: NIODeadline?

    init(limits: ConnectionLimits, now: NIODeadline) {
        self.limits = limits
        phaseDeadline = now + TimeAmount(limits.headerTimeout)
    }

    var isClosing: Bool {
        if case .closing = mode { true } else { false }
    }

    private var isHTTP: Bool {
        if case .http = mode { true } else { false }
    }

    /// No request is being read or answered, and no byte of a new one has arrived.
    var isIdle: Bool { unansweredRequests == 0 && !isReadingRequest && !requestBegan }

    // MARK: Connection events

    /// The connection opened; `refusal` is the answer when it is one too many (the connection cap, the cap per address).
    mutating func activated(refusal: ByteBuffer?, now: NIODeadline) -> Effect {
        if let refusal { return refuse(refusal, now: now) }
        phaseDeadline = now + TimeAmount(limits.headerTimeout)
        return .rearm
    }

    /// Bytes arrived from the client. `forward` is false where they must not go further: drained while closing, or a
    /// WebSocket frame without a mask (then the effect closes the connection with 1002).
    mutating func bytesReceived(_ bytes: ByteBuffer, now: NIODeadline) -> (forward: Bool, effect: Effect) {
        switch mode {
        case .closing:
            return (false, .none)
        case .webSocket(var check):
            let isMasked = check.scan(bytes)
            mode = .webSocket(check)
            return isMasked ? (true, .none) : (false, closeOutput(answer: Self.webSocketProtocolErrorFrame, now: now))
        case .http:
            guard unansweredRequests == 0, !isReadingRequest, !requestBegan else { return (true, .none) }
            requestBegan = true
            phaseDeadline = now + TimeAmount(limits.headerTimeout)
            return (true, .rearm)
        }
    }

    /// Something in the pipeline closed Herald's side of the connection (`close(mode: .output)`): linger.
    mutating func outputClosed(now: NIODeadline) -> Effect {
        guard !isClosing else { return .none }
        startLingering(now: now)
        return .rearm
    }

    /// A graceful shutdown began: idle connections close at once, busy ones by ``ConnectionLimits/shutdownTimeout``.
    mutating func quiesce(now: NIODeadline) -> Effect {
        guard !isQuiescing else { return .none }
        isQuiescing = true
        shutdownDeadline = now + TimeAmount(limits.shutdownTimeout)
        return isHTTP && isIdle ? .close : .rearm
    }

    // MARK: HTTP exchanges (reported by HTTPExchangeObserver)

    mutating func requestHeadReceived(now: NIODeadline) -> Effect {
        hasSeenRequest = true
        unansweredRequests += 1
        isReadingRequest = true
        requestBegan = false
        phaseDeadline = now + TimeAmount(limits.bodyTimeout)
        return .rearm
    }

    mutating func requestEnded() -> Effect {
        isReadingRequest = false
        return .rearm
    }

    /// A response starts; returns whether it is the connection's last (its head then says `Connection: close`).
    mutating func responseStarting() -> Bool {
        isResponding = true
        return isQuiescing || isReadingRequest || pendingRefusal != nil
    }

    mutating func responseEnded(now: NIODeadline) -> Effect {
        isResponding = false
        unansweredRequests = max(0, unansweredRequests - 1)
        if let refusal = pendingRefusal {
            guard unansweredRequests == 0 || isReadingRequest else { return .none }
            pendingRefusal = nil
            return refuse(refusal, now: now)
        }
        if isReadingRequest || isQuiescing && isIdle { return closeOutput(answer: nil, now: now) }
        if isIdle { phaseDeadline = now + TimeAmount(limits.idleTimeout) }
        return .rearm
    }

    /// Whether a WebSocket handshake whose head just arrived needs a WebSocket slot: only a connection's first request
    /// is upgraded (a later one is redirected), and a connection holds at most one.
    var needsWebSocketSlot: Bool { !hasSeenRequest && !holdsWebSocketSlot }

    /// The connection took a WebSocket slot; ``ConnectionGuard`` gives it back when the connection closes.
    mutating func tookWebSocketSlot() {
        holdsWebSocketSlot = true
    }

    /// The slot was given back.
    mutating func releasedWebSocketSlot() {
        holdsWebSocketSlot = false
    }

    mutating func upgradedToWebSocket() -> Effect {
        mode = .webSocket(WebSocketMaskCheck())
        unansweredRequests = 0
        isReadingRequest = false
        isResponding = false
        return .rearm
    }

    /// Answers with `answer` once the requests read in full are answered, and closes the connection.
    mutating func refuseAfterCurrentResponse(_ answer: ByteBuffer, now: NIODeadline) -> Effect {
        // Requests read in full before the bad bytes are answered first; a request cut by them is not.
        if isResponding || unansweredRequests > 0 && !isReadingRequest {
            pendingRefusal = answer
            return .none
        }
        return refuse(answer, now: now)
    }

    /// Writes `answer` and closes, unless the connection is no longer plain HTTP.
    mutating func refuse(_ answer: ByteBuffer, now: NIODeadline) -> Effect {
        guard isHTTP else { return .none }
        return closeOutput(answer: answer, now: now)
    }

    // MARK: The one timer

    /// The deadline that applies now, and what happens when it passes; `nil` when none does (a request being
    /// answered, an open WebSocket).
    var currentDeadline: (deadline: NIODeadline, onExpiry: Expiry)? {
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

    /// The timer fired at `now`: what the deadline that applies says, or ``Effect/rearm`` when it has not passed.
    func timerFired(now: NIODeadline) -> Effect {
        guard let (deadline, onExpiry) = currentDeadline else { return .none }
        guard deadline <= now else { return .rearm }
        switch onExpiry {
        case .close: return .close
        case .requestTimeout(let message): return isResponding ? .close : .answerRequestTimeout(message: message)
        }
    }

    // MARK: Closing

    private mutating func closeOutput(answer: ByteBuffer?, now: NIODeadline) -> Effect {
        guard !isClosing else { return .none }
        startLingering(now: now)
        return .closeOutput(answer: answer)
    }

    private mutating func startLingering(now: NIODeadline) {
        mode = .closing
        lingerDeadline = now + TimeAmount(limits.linger)
    }
}
