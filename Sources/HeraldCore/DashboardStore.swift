import Foundation

/// How many devices there are of one platform in one state.
public struct DeviceTally: Sendable, Equatable {
    public var platform: Platform
    /// `false` once the provider said the device's token is dead.
    public var isActive: Bool
    public var count: Int

    public init(platform: Platform, isActive: Bool, count: Int) {
        self.platform = platform
        self.isActive = isActive
        self.count = count
    }
}

/// How often one provider error was the last error of a notification.
public struct ErrorTally: Sendable, Equatable {
    /// The error as the provider (or Herald) said it, e.g. `BadDeviceToken`.
    public var error: String
    public var count: Int

    public init(error: String, count: Int) {
        self.error = error
        self.count = count
    }
}

/// What the outbox looks like: the figures of the operator dashboard's overview.
public struct NotificationSummary: Sendable, Equatable {
    /// Notifications whose state last changed at or after the summary's start, by their state now.
    public var byStatus: [DeliveryStatus: Int]
    /// Notifications pending now, of any age (the outbox depth).
    public var pending: Int
    /// The most frequent last errors of notifications whose state last changed at or after the start, most frequent
    /// first (ties by the error's text).
    public var topErrors: [ErrorTally]

    public init(byStatus: [DeliveryStatus: Int] = [:], pending: Int = 0, topErrors: [ErrorTally] = []) {
        self.byStatus = byStatus
        self.pending = pending
        self.topErrors = topErrors
    }
}

/// Read-only summaries for the operator dashboard (`/admin`). Each backend answers them from indexes (the
/// notification's `updated_at`, and its device with `updated_at`), so that a page stays cheap as the outbox grows.
public protocol DashboardStore: Sendable {
    /// How many devices there are per platform and state; platforms and states without devices are left out.
    func deviceTallies() async throws -> [DeviceTally]
    /// The notifications whose state changed at or after `since` by state, the outbox depth, and the `errorLimit` most
    /// frequent last errors among them.
    func notificationSummary(since: Date, errorLimit: Int) async throws -> NotificationSummary
    /// With `nil`, the notifications whose state changed last, of all devices, newest change first; of one device, its
    /// latest notifications, newest accepted first (ties by id in both). (An index on a device's notifications by
    /// their last change would be rewritten by every delivery outcome.)
    func recentNotifications(deviceID: Device.ID?, limit: Int) async throws -> [PushNotification]
}
