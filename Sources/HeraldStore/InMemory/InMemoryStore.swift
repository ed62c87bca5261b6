import Foundation
import HeraldCore

/// A store that keeps everything in memory: for tests and for trying Herald without a disk.
/// It follows the same contract as ``SQLiteStore``.
public actor InMemoryStore: HeraldStore {
    var devices: [Device.ID: Device] = [:]
    var notifications: [PushNotification.ID: PushNotification] = [:]
    var counters: [CounterKey: QuotaCounters] = [:]
    private var limitAnnounced: Set<CounterKey> = []
    /// Notifications exempt from the quota, per device and day (their own cap: ``QuotaRequest/exemptMaximum``).
    private var exempt: [CounterKey: Int] = [:]
    var leases: [PushNotification.ID: Lease] = [:]
    var parked: Set<PushNotification.ID> = []
    /// API tokens (see InMemoryStore+APITokens.swift); those of deleted devices are ignored and purged lazily.
    var apiTokens: [APIToken.ID: APIToken] = [:]
    /// ``ServerSettingStore``'s values.
    var settings: [String: String] = [:]
    /// PushWard activities per device and slug (see InMemoryStore+Activities.swift).
    var activityRows: [Device.ID: [String: ActivityRecord]] = [:]
    /// Home Assistant's Live Activity tokens and the last `aps.timestamp` each was given (InMemoryStore+Activities.swift).
    var liveActivityTimestamps: [String: Int] = [:]
    /// Answers and app events per notification (InMemoryStore+AfterPush.swift); those of a deleted notification are
    /// ignored and purged when its device goes.
    var answerRows: [PushNotification.ID: NotificationAnswer] = [:]
    var eventRows: [PushNotification.ID: [NotificationEvent]] = [:]
    /// The order notifications were accepted in (the inbox's cursor); never reused.
    var inboxSequence: [PushNotification.ID: Int64] = [:]
    /// When each device was last heard from (InMemoryStore+Retention.swift).
    var lastSeen: [Device.ID: Date] = [:]
    /// Scheduled sends and their leases (InMemoryStore+ScheduledSends.swift).
    var scheduledSendRows: [ScheduledSend.ID: (send: ScheduledSend, lease: Lease?)] = [:]
    /// Receipts (repeats until acknowledged) and their leases (InMemoryStore+Receipts.swift).
    var receiptRows: [Receipt.ID: (receipt: Receipt, lease: Lease?)] = [:]
    /// Topics and their members (InMemoryStore+Topics.swift).
    var topicRows: [Topic.ID: Topic] = [:]
    var topicMemberRows: [TopicMember.ID: TopicMember] = [:]
    /// The callback outbox and the tokens' outcome callback URLs (InMemoryStore+Callbacks.swift).
    var callbackRows: [CallbackDelivery.ID: (callback: CallbackDelivery, lease: Lease?)] = [:]
    var tokenCallbackURLs: [UUID: (url: String, deviceID: Device.ID)] = [:]

    struct CounterKey: Hashable {
        var deviceID: Device.ID
        var day: String
    }

    public init() {}

    public func insertDevice(_ device: Device) async throws {
        devices[device.id] = device
    }

    public func updateDevice(_ device: Device) async throws {
        guard devices[device.id] != nil else { throw StoreError.notFound("device") }
        devices[device.id] = device
    }

    public func deviceCount() async throws -> Int { devices.count }

    public func activeTokens(platform: Platform) async throws -> [Device.ID: String] {
        devices.values.reduce(into: [:]) { tokens, device in
            if device.platform == platform, device.isActive, let token = device.token { tokens[device.id] = token }
        }
    }

    public func device(userIDHash: String) async throws -> Device? {
        devices.values.first { $0.userIDHash == userIDHash }
    }

    public func device(id: Device.ID) async throws -> Device? { devices[id] }

    public func deleteDevice(id: Device.ID) async throws {
        devices[id] = nil
        let removed = notifications.values.filter { $0.deviceID == id }.map(\.id)
        for notification in removed {
            notifications[notification] = nil
            answerRows[notification] = nil
            eventRows[notification] = nil
            leases[notification] = nil
            parked.remove(notification)
        }
        for notification in removed { removeNotification(notification) }
        counters = counters.filter { $0.key.deviceID != id }
        activityRows[id] = nil
        scheduledSendRows = scheduledSendRows.filter { $0.value.send.deviceID != id }
        receiptRows = receiptRows.filter { $0.value.receipt.deviceID != id }
        removeTopics(ofDevice: id)
        callbackRows = callbackRows.filter { $0.value.callback.deviceID != id }
        tokenCallbackURLs = tokenCallbackURLs.filter { $0.value.deviceID != id }
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        deactivate(token: token, usedFor: id, reason: reason, at: date)
    }

    /// Deactivates every device of `deviceID`'s platform bound to the dead `token`.
    private func deactivate(token: String, usedFor deviceID: Device.ID, reason: String, at date: Date) {
        guard let platform = devices[deviceID]?.platform else { return }
        for (id, device) in devices where device.platform == platform && device.token == token {
            devices[id]?.isActive = false
            devices[id]?.inactiveReason = reason
            devices[id]?.updatedAt = date
        }
    }

    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        for request in batch.accepts where devices[request.notification.deviceID] == nil {
            throw StoreError.notFound("device")  // as a foreign key would: nothing of the batch is written
        }
        try batch.gate?.pass()
        let decisions = batch.accepts.map { accept($0) }
        for outcome in batch.outcomes { save(outcome, owner: batch.owner) }
        return decisions
    }

    private func accept(_ request: AcceptRequest) -> AcceptDecision {
        let notification = request.notification
        let key = CounterKey(deviceID: notification.deviceID, day: request.quota.day)
        var current = counters[key] ?? QuotaCounters()
        if request.quota.countsAttempt { current.attempts += 1 }
        var usedUpQuota = false
        if let pendingMaximum = request.quota.pendingMaximum,
            notifications.values.lazy.filter({ $0.deviceID == notification.deviceID && $0.status == .pending }).count >= pendingMaximum
        {
            counters[key] = current
            return .backlogFull(current)
        }
        if request.quota.maximum == nil, let exemptMaximum = request.quota.exemptMaximum {
            guard exempt[key, default: 0] < exemptMaximum else {
                counters[key] = current
                return .exemptQuotaExceeded(current)
            }
            exempt[key, default: 0] += 1
        }
        if let maximum = request.quota.maximum {
            if current.successful >= maximum {
                counters[key] = current
                return .quotaExceeded(current)
            }
            current.successful += 1
            current.total += 1
            if current.successful >= maximum, limitAnnounced.insert(key).inserted { usedUpQuota = true }
        }
        counters[key] = current
        notifications[notification.id] = notification
        inboxSequence[notification.id] = Int64(inboxSequence.count + 1)
        leases[notification.id] = request.lease
        return .accepted(current, usedUpQuota: usedUpQuota)
    }

    private func save(_ outcome: DeliveryOutcome, owner: String) {
        let id = outcome.notification.id
        guard let stored = notifications[id], stored.status == .pending, leases[id]?.owner == owner else { return }
        if outcome.releasesQuota, let day = stored.quotaDay {
            let key = CounterKey(deviceID: stored.deviceID, day: day)
            var current = counters[key] ?? QuotaCounters()
            current.release()
            counters[key] = current
        }
        if let token = outcome.deadToken {
            deactivate(
                token: token, usedFor: stored.deviceID, reason: outcome.notification.lastError ?? "dead token",
                at: outcome.notification.updatedAt)
        }
        notifications[id] = outcome.notification
        leases[id] = nil
        if outcome.isParked { parked.insert(id) } else { parked.remove(id) }
    }

    private func isClaimable(_ notification: PushNotification, at now: Date) -> Bool {
        guard notification.status == .pending else { return false }
        guard let lease = leases[notification.id] else { return true }
        return lease.expiresAt <= now
    }

    public func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] {
        ids.compactMap { id in
            guard let notification = notifications[id], isClaimable(notification, at: now), notification.nextAttemptAt <= now
            else { return nil }
            leases[id] = lease
            return notification
        }
    }

    public func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] {
        let claimable = notifications.values.filter { $0.deviceID == deviceID && isClaimable($0, at: now) }
        let claimed = Array(claimable.sorted(by: Self.creationOrder).prefix(limit))
        for notification in claimed {
            leases[notification.id] = lease
            parked.remove(notification.id)
        }
        return claimed
    }

    public func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] {
        let waiting = notifications.values.filter { isClaimable($0, at: now) }
            .sorted { ($0.nextAttemptAt, $0.createdAt, $0.id.uuidString) < ($1.nextAttemptAt, $1.createdAt, $1.id.uuidString) }
        return waiting.prefix(limit).map { ScheduledAttempt(id: $0.id, dueAt: $0.nextAttemptAt, deviceID: $0.deviceID) }
    }

    public func renewLeases(owner: String, until expiry: Date) async throws {
        for (id, lease) in leases where lease.owner == owner { leases[id]?.expiresAt = expiry }
    }

    public func releaseLeases(owner: String) async throws {
        leases = leases.filter { $0.value.owner != owner }
    }

    public func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int {
        var count = 0
        for id in parked {
            guard let notification = notifications[id], notification.status == .pending,
                let device = devices[notification.deviceID], device.token != nil, platforms.contains(device.platform)
            else { continue }
            notifications[id]?.nextAttemptAt = now
            parked.remove(id)
            count += 1
        }
        return count
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? { notifications[id] }

    public func lease(of id: PushNotification.ID) async throws -> Lease? { leases[id] }

    public func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] {
        let pending = notifications.values.filter { $0.deviceID == deviceID && $0.status == .pending }
        return Array(pending.sorted(by: Self.creationOrder).prefix(limit))
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        counters[CounterKey(deviceID: deviceID, day: day)] ?? QuotaCounters()
    }

    public func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth {
        let pending = notifications.values.filter { $0.status == .pending }
        return OutboxDepth(pending: min(pending.count, limit), due: min(pending.count { $0.nextAttemptAt <= now }, limit))
    }

    public func readiness() async -> StoreReadiness { .ready }

    public func close() async throws {}

    private static func creationOrder(_ lhs: PushNotification, _ rhs: PushNotification) -> Bool {
        (lhs.createdAt, lhs.id.uuidString) < (rhs.createdAt, rhs.id.uuidString)
    }
}

// MARK: Dashboard

extension InMemoryStore {
    public func deviceTallies() async throws -> [DeviceTally] {
        let grouped = Dictionary(grouping: devices.values) { DeviceTallyKey(platform: $0.platform, isActive: $0.isActive) }
        return grouped.map { DeviceTally(platform: $0.key.platform, isActive: $0.key.isActive, count: $0.value.count) }
            .sorted { ($0.platform.rawValue, $0.isActive ? 0 : 1) < ($1.platform.rawValue, $1.isActive ? 0 : 1) }
    }

    public func notificationSummary(since: Date, errorLimit: Int) async throws -> NotificationSummary {
        let recent = notifications.values.filter { $0.updatedAt >= since }
        var errors: [String: Int] = [:]
        for notification in recent {
            if let error = notification.lastError { errors[error, default: 0] += 1 }
        }
        return NotificationSummary(
            byStatus: Dictionary(grouping: recent, by: \.status).mapValues(\.count),
            pending: notifications.values.count { $0.status == .pending },
            topErrors: errors.map { ErrorTally(error: $0.key, count: $0.value) }
                .sorted { ($1.count, $0.error) < ($0.count, $1.error) }
                .prefix(errorLimit).map { $0 })
    }

    public func recentNotifications(deviceID: Device.ID?, limit: Int) async throws -> [PushNotification] {
        guard let deviceID else {
            return Array(
                notifications.values.sorted { ($1.updatedAt, $1.id.uuidString) < ($0.updatedAt, $0.id.uuidString) }.prefix(limit))
        }
        return Array(
            notifications.values.filter { $0.deviceID == deviceID }
                .sorted { ($1.createdAt, $1.id.uuidString) < ($0.createdAt, $0.id.uuidString) }.prefix(limit))
    }

    private struct DeviceTallyKey: Hashable {
        var platform: Platform
        var isActive: Bool
    }
}
