import Foundation

/// What became of a notification offered to a device's open connections.
public enum LocalOffer: Sendable, Equatable {
    /// A client that does not confirm took it: it counts as delivered.
    case delivered
    /// No client took it (none connected, or every one is too far behind): try the next channel.
    case notTaken
    /// A confirming client has it; the offer's `confirmed` callback says, exactly once, whether it confirmed in time.
    case awaitingConfirmation
}

/// A direct connection to devices that are online right now (Herald's WebSocket channel). The delivery engine
/// tries it before the device's cloud provider; a notification it delivers never goes to APNs.
///
/// A confirmation is not waited for in a delivery slot: ``offer(_:to:confirmed:)`` answers at once and calls back
/// when the client confirms or its time is up, so a client that never confirms costs an entry in a timer queue,
/// not a slot.
public protocol LocalChannel: Sendable {
    /// Whether a client of this device is connected.
    func isConnected(_ deviceID: Device.ID) -> Bool

    /// Offers the notification to the device's connected clients. With ``LocalOffer/awaitingConfirmation``,
    /// `confirmed` is called exactly once, later or concurrently with the return (a client may confirm at once),
    /// with `true` when a client confirmed within the channel's timeout and `false` otherwise; with the other
    /// answers it is never called.
    func offer(_ notification: PushNotification, to device: Device, confirmed: @escaping @Sendable (Bool) -> Void) -> LocalOffer
}

extension LocalChannel {
    /// Offers the notification and waits for its outcome: `true` when it counts as delivered (a client confirmed
    /// within the timeout, or a client that does not confirm took it).
    public func deliver(_ notification: PushNotification, to device: Device) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            switch offer(notification, to: device, confirmed: { continuation.resume(returning: $0) }) {
            case .delivered: continuation.resume(returning: true)
            case .notTaken: continuation.resume(returning: false)
            case .awaitingConfirmation: break
            }
        }
    }
}
