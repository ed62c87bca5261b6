import Foundation

/// Devices and their credentials.
public protocol DeviceStore: Sendable {
    /// Inserts a new device. A token already bound to another device of the same platform moves to this one
    /// (the other device loses its token and becomes inactive), atomically.
    func insertDevice(_ device: Device) async throws
    /// Replaces a stored device (matched by id), moving its token away from any other device as `insertDevice` does.
    func updateDevice(_ device: Device) async throws
    /// The device whose USER_ID hashes to `userIDHash`.
    func device(userIDHash: String) async throws -> Device?
    /// The device with this id.
    func device(id: Device.ID) async throws -> Device?
    /// Removes a device together with its notifications and counters.
    func deleteDevice(id: Device.ID) async throws
    /// Marks a device inactive (its token is dead) unless it changed token since `token` was used.
    func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws
}

/// The daily counters of one device, as the rate-limit answers report them.
public struct QuotaCounters: Sendable, Equatable {
    /// Every send request that passed validation, including those refused for the limit.
    public var attempts: Int
    /// Notifications accepted and not failed; these consume the quota.
    public var successful: Int
    /// Notifications accepted that then failed for good (dead token, refused by the provider).
    public var errors: Int
    /// Notifications accepted (`successful + errors`).
    public var total: Int

    public init(attempts: Int = 0, successful: Int = 0, errors: Int = 0, total: Int = 0) {
        self.attempts = attempts
        self.successful = successful
        self.errors = errors
        self.total = total
    }
}

/// The quota a notification is accepted under.
public struct QuotaRequest: Sendable, Equatable {
    /// The UTC day (`yyyy-MM-dd`) of the counters.
    public var day: String
    /// The device's daily maximum; `nil` when the notification is exempt (it is counted as an attempt only).
    public var maximum: Int?
    /// Whether the request counts as an attempt (not for notifications Herald itself sends).
    public var countsAttempt: Bool

    public init(day: String, maximum: Int?, countsAttempt: Bool = true) {
        self.day = day
        self.maximum = maximum
        self.countsAttempt = countsAttempt
    }
}

/// What the store decided when asked to accept a notification.
public enum AcceptDecision: Sendable, Equatable {
    /// Stored durably; the counters after the notification was counted.
    case accepted(QuotaCounters)
    /// Not stored: the day's quota is used up; the counters after the refused attempt was counted.
    case quotaExceeded(QuotaCounters)
}

/// Accepted notifications and their delivery state: Herald's durable outbox.
public protocol NotificationStore: Sendable {
    /// Atomically: counts the attempt, checks the quota (when `quota.maximum` is set), and if there is room
    /// stores the notification and counts it as successful.
    func accept(_ notification: PushNotification, quota: QuotaRequest) async throws -> AcceptDecision
    /// One notification.
    func notification(id: PushNotification.ID) async throws -> PushNotification?
    /// Pending notifications whose next attempt is due at `date`, for devices of the given platforms, oldest due first.
    func dueNotifications(at date: Date, platforms: Set<Platform>, limit: Int) async throws -> [PushNotification]
    /// Pending notifications of one device, oldest first.
    func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification]
    /// Saves a notification's new delivery state. When `releaseQuota` is true and the notification consumed quota,
    /// its count moves from `successful` to `errors` in the same transaction.
    func updateNotification(_ notification: PushNotification, releaseQuota: Bool) async throws
    /// The counters of one device for one UTC day.
    func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters
}

/// Everything Herald keeps. One implementation per backend (in-memory, SQLite, later PostgreSQL),
/// all held to the same contract test suite.
public protocol HeraldStore: DeviceStore, NotificationStore, APITokenStore {
    /// Whether the backend answers (for `/readyz`).
    func isReachable() async -> Bool
    /// Releases the backend's resources; nothing may be called afterwards.
    func close() async throws
}
