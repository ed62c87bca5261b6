import Foundation
import HeraldCore
import Synchronization

/// A local channel (Herald's WebSocket channel, without sockets) for unit tests of the delivery engine: a device is
/// connected or not, and its client takes, declines or awaits its confirmation; a test confirms or lets the
/// confirmation time out on command.
///
/// ```swift
/// let channel = FakeLocalChannel()
/// channel.connect(device.id, client: .confirming)
/// // … the engine offers a notification …
/// channel.confirm(notification.id)  // or channel.expire(notification.id)
/// ```
public final class FakeLocalChannel: LocalChannel {
    /// What a connected client does with an offer.
    public enum Client: Sendable {
        /// Takes it without confirming: it counts as delivered at once.
        case nonConfirming
        /// Takes it and confirms later (``FakeLocalChannel/confirm(_:)``), or not (``FakeLocalChannel/expire(_:)``).
        case confirming
        /// Does not take it (too far behind).
        case declining
    }

    private struct State {
        var clients: [Device.ID: Client] = [:]
        var offered: [PushNotification] = []
        var awaiting: [PushNotification.ID: @Sendable (Bool) -> Void] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    public func connect(_ deviceID: Device.ID, client: Client) {
        state.withLock { $0.clients[deviceID] = client }
    }

    public func disconnect(_ deviceID: Device.ID) {
        _ = state.withLock { $0.clients.removeValue(forKey: deviceID) }
    }

    public func isConnected(_ deviceID: Device.ID) -> Bool {
        state.withLock { $0.clients[deviceID] != nil }
    }

    public func offer(_ notification: PushNotification, to device: Device, confirmed: @escaping @Sendable (Bool) -> Void)
        -> LocalOffer
    {
        state.withLock { state in
            state.offered.append(notification)
            switch state.clients[device.id] {
            case nil, .declining:
                return .notTaken
            case .nonConfirming:
                return .delivered
            case .confirming:
                state.awaiting[notification.id] = confirmed
                return .awaitingConfirmation
            }
        }
    }

    /// Every notification offered so far, in order.
    public var offered: [PushNotification] { state.withLock { $0.offered } }

    /// Notifications whose confirmation is awaited.
    public var awaitingConfirmation: Set<PushNotification.ID> { state.withLock { Set($0.awaiting.keys) } }

    /// The client confirms the notification; `false` when none was awaited.
    @discardableResult
    public func confirm(_ id: PushNotification.ID) -> Bool { answer(id, confirmed: true) }

    /// The confirmation's time is up; `false` when none was awaited.
    @discardableResult
    public func expire(_ id: PushNotification.ID) -> Bool { answer(id, confirmed: false) }

    private func answer(_ id: PushNotification.ID, confirmed: Bool) -> Bool {
        guard let callback = state.withLock({ $0.awaiting.removeValue(forKey: id) }) else { return false }
        callback(confirmed)
        return true
    }
}
