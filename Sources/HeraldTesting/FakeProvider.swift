import Foundation
import HeraldCore
import Synchronization

/// A push provider for unit tests of the delivery engine: answers each send with the next scripted
/// ``DeliveryResult`` (then with `otherwise`), records what it was sent, and can hold sends until released (an
/// attempt in flight, for a test that changes the world meanwhile).
///
/// ```swift
/// let provider = FakeProvider(results: [.retry(reason: "429", after: nil)])  // then delivered
/// let engine = DeliveryEngine(store: store, providers: [provider], clock: clock, logger: logger)
/// provider.sent.count  // 1 after the first attempt
/// ```
public final class FakeProvider: PushProvider {
    /// One send: the notification as the engine sent it, and its device.
    public struct Send: Sendable, Equatable {
        public var notification: PushNotification
        public var device: Device
    }

    public let platform: Platform
    private let otherwise: DeliveryResult
    private struct State {
        var script: [DeliveryResult]
        var sent: [Send] = []
        var isHolding = false
        var held: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    public init(
        platform: Platform = .apns, results: [DeliveryResult] = [],
        otherwise: DeliveryResult = .delivered(providerMessageID: "fake-id")
    ) {
        self.platform = platform
        self.otherwise = otherwise
        state = Mutex(State(script: results))
    }

    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holds = state.withLock { state in
                state.sent.append(Send(notification: notification, device: device))
                if state.isHolding { state.held.append(continuation) }
                return state.isHolding
            }
            if !holds { continuation.resume() }
        }
        return state.withLock { $0.script.isEmpty ? otherwise : $0.script.removeFirst() }
    }

    /// Every send so far, in order.
    public var sent: [Send] { state.withLock { $0.sent } }

    /// Appends answers to the script.
    public func script(_ results: DeliveryResult...) {
        state.withLock { $0.script += results }
    }

    /// Sends from now on wait (after being recorded) until ``release()``.
    public func hold() {
        state.withLock { $0.isHolding = true }
    }

    /// Sends that wait for ``release()``.
    public var heldCount: Int { state.withLock { $0.held.count } }

    /// Lets the waiting sends answer, and the next ones answer at once.
    public func release() {
        let held = state.withLock { state in
            state.isHolding = false
            defer { state.held = [] }
            return state.held
        }
        for send in held { send.resume() }
    }
}
