import Foundation
import HeraldCore

/// Bounded storage in memory: the same rules as the SQLite store's (``RetentionStore``).
extension InMemoryStore {
    /// Removes one notification and everything that goes with it: the one place where answers, events and receipts
    /// kept in memory are removed with their notification.
    func removeNotification(_ id: PushNotification.ID) {
        notifications[id] = nil
        leases[id] = nil
        parked.remove(id)
        answerRows[id] = nil
        eventRows[id] = nil
        inboxSequence[id] = nil
    }

    public func deleteFinishedNotifications(before cutoff: Date, limit: Int) async throws -> Int {
        let old = notifications.values.filter { $0.status != .pending && $0.updatedAt < cutoff }
            .sorted { $0.updatedAt < $1.updatedAt }.prefix(limit)
        for notification in old { removeNotification(notification.id) }
        return old.count
    }

    public func reclaimSpace() async throws {}

    public func markDevicesSeen(_ ids: [Device.ID], at date: Date) async throws {
        for id in ids where devices[id] != nil { lastSeen[id] = date }
    }

    private func isIdle(_ device: Device, since cutoff: Date) -> Bool {
        let day = UTCDay(containing: cutoff).description
        return device.updatedAt < cutoff && (lastSeen[device.id] ?? .distantPast) < cutoff
            && !counters.keys.contains { $0.deviceID == device.id && $0.day >= day }
    }

    public func idleDeviceCount(since cutoff: Date, limit: Int) async throws -> Int {
        min(limit, devices.values.filter { isIdle($0, since: cutoff) }.count)
    }

    public func deleteIdleDevices(since cutoff: Date, limit: Int) async throws -> [Device.ID] {
        let idle = devices.values.filter { isIdle($0, since: cutoff) }.prefix(limit).map(\.id)
        for id in idle {
            try await deleteDevice(id: id)
            lastSeen[id] = nil
        }
        return idle
    }
}
