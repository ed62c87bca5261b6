import NIOCore
import Testing

@testable import HeraldTransport

/// The connection guard's decisions, driven event by event with times of the test's own: no channel, no socket, no
/// waiting.
@Suite("Connection state")
struct ConnectionStateTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private let limits: ConnectionLimits = {
        var limits = ConnectionLimits()
        limits.headerTimeout = .seconds(10)
        limits.bodyTimeout = .seconds(30)
        limits.idleTimeout = .seconds(60)
        limits.shutdownTimeout = .seconds(5)
        limits.linger = .seconds(2)
        return limits
    }()
    private let answer = ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\n\r\n")

    private func at(_ seconds: Int64) -> NIODeadline { start + .seconds(seconds) }

    private func opened() -> ConnectionState {
        var state = ConnectionState(limits: limits, now: start)
        #expect(state.activated(refusal: nil, now: start) == .rearm)
        return state
    }

    @Test func aHeadThatDoesNotArriveInTimeIsAnswered408ThenTheConnectionLingersAndCloses() throws {
        var state = opened()
        let deadline = try #require(state.currentDeadline)
        #expect(deadline.deadline == at(10))
        #expect(deadline.onExpiry == .requestTimeout("The request head did not arrive in time."))
        #expect(state.timerFired(now: at(9)) == .rearm)
        #expect(state.timerFired(now: at(10)) == .answerRequestTimeout(message: "The request head did not arrive in time."))

        #expect(state.refuse(answer, now: at(10)) == .closeOutput(answer: answer))
        #expect(state.isClosing)
        #expect(state.currentDeadline?.deadline == at(12))
        #expect(state.currentDeadline?.onExpiry == .close)
        #expect(state.bytesReceived(ByteBuffer(string: "more"), now: at(11)) == (false, .none))  // drained
        #expect(state.timerFired(now: at(12)) == .close)
    }

    @Test func aConnectionOverTheCapIsRefusedAtOnce() {
        var state = ConnectionState(limits: limits, now: start)
        #expect(state.activated(refusal: answer, now: start) == .closeOutput(answer: answer))
        #expect(state.currentDeadline?.deadline == at(2))
    }

    @Test func aKeepAliveExchangeMovesFromHeaderToBodyToNoDeadlineToIdle() throws {
        var state = opened()
        #expect(state.bytesReceived(ByteBuffer(string: "GET"), now: at(1)) == (true, .rearm))
        #expect(state.currentDeadline?.deadline == at(11))  // the header timeout runs from the first byte
        #expect(state.requestHeadReceived(now: at(2)) == .rearm)
        #expect(state.currentDeadline?.deadline == at(32))
        #expect(state.currentDeadline?.onExpiry == .requestTimeout("The request body did not arrive in time."))
        #expect(state.requestEnded() == .rearm)
        #expect(state.currentDeadline == nil)  // answering: no deadline
        let lastOfFirst = state.responseStarting()
        #expect(!lastOfFirst)
        #expect(state.responseEnded(now: at(40)) == .rearm)
        #expect(state.isIdle)
        #expect(state.currentDeadline?.deadline == at(100))
        #expect(state.currentDeadline?.onExpiry == .close)

        // The next request's first bytes start its header timeout again.
        #expect(state.bytesReceived(ByteBuffer(string: "POST"), now: at(50)) == (true, .rearm))
        #expect(state.currentDeadline?.deadline == at(60))
        #expect(state.bytesReceived(ByteBuffer(string: " /"), now: at(51)) == (true, .none))
    }

    @Test func aResponseSentBeforeItsRequestWasReadClosesTheConnection() {
        var state = opened()
        _ = state.requestHeadReceived(now: at(1))
        let isLast = state.responseStarting()
        #expect(isLast)  // 413 while the body is still coming: Connection: close
        #expect(state.responseEnded(now: at(2)) == .closeOutput(answer: nil))
        #expect(state.isClosing)
    }

    @Test func aRefusalWaitsForTheResponseInProgress() {
        var state = opened()
        _ = state.requestHeadReceived(now: at(1))
        _ = state.requestEnded()
        let isLast = state.responseStarting()
        #expect(!isLast)
        #expect(state.refuseAfterCurrentResponse(answer, now: at(2)) == .none)
        #expect(state.pendingRefusal == answer)
        #expect(state.responseEnded(now: at(3)) == .closeOutput(answer: answer))
        #expect(state.pendingRefusal == nil)
    }

    @Test func aRefusalOfAnIdleConnectionIsWrittenAtOnce() {
        var state = opened()
        #expect(state.refuseAfterCurrentResponse(answer, now: at(1)) == .closeOutput(answer: answer))
    }

    @Test func aBodyTimeoutWhileTheResponseIsBeingWrittenClosesWithoutAnAnswer() {
        var state = opened()
        _ = state.requestHeadReceived(now: at(1))
        _ = state.responseStarting()
        #expect(state.timerFired(now: at(31)) == .close)
    }

    @Test func shutdownClosesIdleConnectionsAtOnceAndBusyOnesByItsDeadline() {
        var idle = opened()
        _ = idle.requestHeadReceived(now: at(1))
        _ = idle.requestEnded()
        _ = idle.responseStarting()
        _ = idle.responseEnded(now: at(2))
        #expect(idle.quiesce(now: at(3)) == .close)

        var busy = opened()
        _ = busy.requestHeadReceived(now: at(1))
        #expect(busy.quiesce(now: at(3)) == .rearm)
        #expect(busy.quiesce(now: at(4)) == .none)  // once
        #expect(busy.currentDeadline?.deadline == at(8))
        #expect(busy.currentDeadline?.onExpiry == .close)
        let isLast = busy.responseStarting()
        #expect(isLast)  // the last response of a closing server
        _ = busy.requestEnded()
        #expect(busy.responseEnded(now: at(5)) == .closeOutput(answer: nil))
    }

    @Test func aWebSocketHasNoDeadlineAndClosesWith1002OnAnUnmaskedFrame() {
        var state = opened()
        #expect(state.needsWebSocketSlot)
        state.tookWebSocketSlot()
        #expect(!state.needsWebSocketSlot && state.holdsWebSocketSlot)
        _ = state.requestHeadReceived(now: at(1))
        #expect(state.upgradedToWebSocket() == .rearm)
        #expect(state.currentDeadline == nil)
        #expect(state.refuse(answer, now: at(2)) == .none)  // HTTP answers no longer apply

        let masked = ByteBuffer(bytes: [0x81, 0x82, 1, 2, 3, 4, 0x61, 0x62])
        #expect(state.bytesReceived(masked, now: at(2)) == (true, .none))
        let unmasked = ByteBuffer(bytes: [0x81, 0x02, 0x61, 0x62])
        #expect(state.bytesReceived(unmasked, now: at(3)) == (false, .closeOutput(answer: ConnectionState.webSocketProtocolErrorFrame)))
        #expect(state.currentDeadline?.deadline == at(5))
    }

    @Test func aLaterRequestOnTheConnectionNeedsNoWebSocketSlot() {
        var state = opened()
        _ = state.requestHeadReceived(now: at(1))
        #expect(!state.needsWebSocketSlot)
    }

    @Test func closingTheOutputElsewhereStartsTheLingerOnce() {
        var state = opened()
        #expect(state.outputClosed(now: at(1)) == .rearm)
        #expect(state.outputClosed(now: at(2)) == .none)
        #expect(state.currentDeadline?.deadline == at(3))
    }
}
