import Foundation
import HeraldCore

/// A store that keeps everything in memory: for tests and for trying Herald without a disk.
/// It follows the same contract as ``SQLiteStore``.
public actor InMemoryStore: HeraldStore {
    private var devices: [Device.ID: Device] = [:]
    private var notifications: [PushNotification.ID: PushNotification] = [:]
    private var counters: [CounterKey: QuotaCounters] = [:]
    /// API tokens (see InMemoryStore+APITokens.swift); those of deleted devices are ignored and purged lazily.
    var apiTokens: [APIToken.ID: APIToken] = [:]

    private struct CounterKey: Hashable {
        var deviceID: Device.ID
        var day: String
    }

    public init() {}

    public func insertDevice(_ device: Device) async throws {
        moveToken(to: device)
        devices[device.id] = device
    }

    public func updateDevice(_ device: Device) async throws {
        guard devices[device.id] != nil else { throw StoreError.notFound("device") }
        moveToken(to: device)
        devices[device.id] = device
    }

    private func moveToken(to device: Device) {
        guard let token = device.token else { return }
        for (id, other) in devices where id != device.id && other.platform == device.platform && other.token == token {
            devices[id]?.token = nil
            devices[id]?.isActive = false
            devices[id]?.inactiveReason = StoreError.tokenMovedReason
            devices[id]?.updatedAt = device.updatedAt
        }
    }

    public func device(userIDHash: String) async throws -> Device? {
        devices.values.first { $0.userIDHash == userIDHash }
    }

    public func device(id: Device.ID) async throws -> Device? { devices[id] }

    public func deleteDevice(id: Device.ID) async throws {
        devices[id] = nil
        notifications = notifications.filter { $0.value.deviceID != id }
        counters = counters.filter { $0.key.deviceID != id }
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        guard var device = devices[id], device.token == token else { return }
        device.isActive = false
        device.inactiveReason = reason
        device.updatedAt = date
        devices[id] = device
    }

    public func accept(_ notification: PushNotification, quota: QuotaRequest) async throws -> AcceptDecision {
        let key = CounterKey(deviceID: notification.deviceID, day: quota.day)
        var current = counters[key] ?? QuotaCounters()
        if quota.countsAttempt { current.attempts += 1 }
        if let maximum = quota.maximum {
            if current.successful >= maximum {
                counters[key] = current
                return .quotaExceeded(current)
            }
            current.successful += 1
            current.total += 1
        }
        counters[key] = current
        notifications[notification.id] = notification
        return .accepted(current)
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? { notifications[id] }

    public func dueNotifications(at date: Date, platforms: Set<Platform>, limit: Int) async throws -> [PushNotification] {
        let due = notifications.values.filter { notification in
            guard notification.status == .pending, notification.nextAttemptAt <= date,
                let device = devices[notification.deviceID]
            else { return false }
            return platforms.contains(device.platform)
        }
        return Array(due.sorted(by: Self.dueOrder).prefix(limit))
    }

    public func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] {
        let pending = notifications.values.filter { $0.deviceID == deviceID && $0.status == .pending }
        return Array(pending.sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }.prefix(limit))
    }

    public func updateNotification(_ notification: PushNotification, releaseQuota: Bool) async throws {
        guard let stored = notifications[notification.id] else { throw StoreError.notFound("notification") }
        if releaseQuota, stored.status == .pending, let day = stored.quotaDay {
            let key = CounterKey(deviceID: stored.deviceID, day: day)
            var current = counters[key] ?? QuotaCounters()
            current.successful = max(0, current.successful - 1)
            current.errors += 1
            counters[key] = current
        }
        notifications[notification.id] = notification
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        counters[CounterKey(deviceID: deviceID, day: day)] ?? QuotaCounters()
    }

    public func isReachable() async -> Bool { true }

    public func close() async throws {}

    private static func dueOrder(_ lhs: PushNotification, _ rhs: PushNotification) -> Bool {
        (lhs.nextAttemptAt, lhs.createdAt, lhs.id.uuidString) < (rhs.nextAttemptAt, rhs.createdAt, rhs.id.uuidString)
    }
}
