import Foundation

/// A direct connection to devices that are online right now (Herald's WebSocket channel). The delivery worker
/// tries it before the device's cloud provider; a notification it delivers never goes to APNs.
public protocol LocalChannel: Sendable {
    /// Whether a client of this device is connected.
    func isConnected(_ deviceID: Device.ID) -> Bool

    /// Sends the notification to the device's connected clients. Returns `true` when it counts as delivered: a client
    /// confirmed it within the confirmation timeout, or it was handed to a client that does not confirm.
    func deliver(_ notification: PushNotification, to device: Device) async -> Bool
}
