import Foundation

/// The APNs push type of a notification (the subset Herald sends).
public enum PushType: String, Sendable, Codable {
    /// A visible alert.
    case alert
    /// A silent background update (`content-available: 1`, priority 5).
    case background
    /// A Live Activity start, update or end, sent to the activity's own token (``PushNotification/liveActivityToken``)
    /// with the topic `<topic>.push-type.liveactivity`.
    case liveactivity
}

/// Where a notification is in its life.
public enum DeliveryStatus: String, Sendable, Codable {
    /// Accepted and waiting for (another) delivery attempt.
    case pending
    /// The provider accepted it.
    case delivered
    /// The provider refused it for good, or the device is gone.
    case failed
    /// Its expiry passed before a provider accepted it.
    case expired
    /// Kept for the device's inbox and never pushed (`POST /notifications` with `"push": false`).
    case stored
}

/// The one internal notification. Every send API decodes its own request and produces this;
/// one pipeline stores, rate-limits and delivers it.
///
/// `content` is what the notification says, for every provider; `payload` is that content rendered for the device's
/// provider when it was accepted (``renderedBy``), already fitted to the provider's size limit: for APNs (and
/// WebSocket-only devices) the APNs payload (`aps` plus custom keys), sent byte for byte; for FCM the `message` object
/// without its target, to which the provider adds the device's token (and `android.ttl`). A provider whose renderer
/// did not make `payload` renders `content` again (``PayloadRenderer/payload(of:)``).
public struct PushNotification: Sendable, Equatable, Identifiable {
    public var id: UUID
    public var deviceID: Device.ID
    public var pushType: PushType
    /// How urgently to deliver it; the store keeps its APNs number (``NotificationPriority/apnsValue``).
    public var priority: NotificationPriority
    /// `apns-collapse-id`: a later notification with the same id replaces this one on the device.
    public var collapseID: String?
    /// The JSON payload (an object with `aps`, or an FCM message).
    public var payload: Data
    /// The renderer that made ``payload`` (``PayloadRenderer/name``); `nil` for rows stored before Herald kept it.
    public var renderedBy: String?
    /// What the notification says; `nil` for rows stored before Herald kept it (their payload is sent as it is).
    public var content: NotificationContent?
    /// The UTC day whose quota this notification consumed; `nil` when it is exempt (commands, critical alerts).
    public var quotaDay: String?
    public var status: DeliveryStatus
    public var attempts: Int
    public var lastError: String?
    /// The provider's id for the accepted push (APNs: `apns-id`).
    public var providerMessageID: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// When the next delivery attempt is due.
    public var nextAttemptAt: Date
    /// After this the notification is not delivered any more.
    public var expiresAt: Date
    /// For a Live Activity push: the activity's (or the push-to-start) token it goes to instead of the device's
    /// token. A dead one ends this push, not the device.
    public var liveActivityToken: String?

    public init(
        id: UUID = .random(), deviceID: Device.ID, pushType: PushType, priority: NotificationPriority, collapseID: String?, payload: Data,
        quotaDay: String?, status: DeliveryStatus = .pending, attempts: Int = 0, lastError: String? = nil,
        providerMessageID: String? = nil, createdAt: Date, updatedAt: Date? = nil, nextAttemptAt: Date? = nil,
        expiresAt: Date, liveActivityToken: String? = nil, renderedBy: String? = nil, content: NotificationContent? = nil
    ) {
        self.renderedBy = renderedBy
        self.content = content
        self.id = id
        self.deviceID = deviceID
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
        self.quotaDay = quotaDay
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.providerMessageID = providerMessageID
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.expiresAt = expiresAt
        self.liveActivityToken = liveActivityToken
    }
}
