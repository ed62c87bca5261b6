import Foundation

/// What a provider made of one delivery attempt, already classified into what Herald does next.
public enum DeliveryResult: Sendable, Equatable {
    /// Accepted by the provider; `providerMessageID` is e.g. the `apns-id`.
    case delivered(providerMessageID: String?)
    /// The device token is dead (APNs 410 `Unregistered`/`ExpiredToken`, 400 `BadDeviceToken`/`DeviceTokenNotForTopic`):
    /// the device is marked inactive until it registers again.
    case deadToken(reason: String)
    /// Transient (429, 5xx, connection errors, timeouts): try again later, no earlier than `after` if given.
    case retry(reason: String, after: Duration?)
    /// Refused for good (413, other 400s, 403 `Forbidden`): recorded, never retried.
    case failed(reason: String)
}

/// A delivery channel to devices of one platform (APNs, later FCM).
///
/// Providers are stateless towards the pipeline: they send one notification and classify the answer.
/// Retrying, storage and rate limits are the pipeline's job.
public protocol PushProvider: Sendable {
    /// The platform whose devices this provider reaches.
    var platform: Platform { get }

    /// Sends one notification to one device and classifies the outcome. Never throws: every failure is a `DeliveryResult`.
    func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult
}
