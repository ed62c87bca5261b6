import Foundation
import HeraldCore

/// A notification store of which a group-commit test uses only `commit`: every other member answers as an empty store.
protocol CommitOnlyNotificationStore: NotificationStore {}

extension CommitOnlyNotificationStore {
    func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] { [] }
    func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] { [] }
    func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] { [] }
    func renewLeases(owner: String, until expiry: Date) async throws {}
    func releaseLeases(owner: String) async throws {}
    func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int { 0 }
    func notification(id: PushNotification.ID) async throws -> PushNotification? { nil }
    func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] { [] }
    func lease(of id: PushNotification.ID) async throws -> Lease? { nil }
    func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters { QuotaCounters() }
    func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth { OutboxDepth(pending: 0, due: 0) }
}
