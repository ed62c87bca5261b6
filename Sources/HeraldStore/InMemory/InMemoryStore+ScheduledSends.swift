import Foundation
import HeraldCore

/// Scheduled sends in memory: the same rules as the SQLite store's (``ScheduledSendStore``).
extension InMemoryStore {
    public func insertScheduledSend(_ send: ScheduledSend, maximumPending: Int) async throws -> Bool {
        guard devices[send.deviceID] != nil else { throw StoreError.notFound("device") }
        let pending = scheduledSendRows.values.filter { $0.send.deviceID == send.deviceID && $0.send.status == .scheduled }.count
        guard pending < maximumPending else { return false }
        scheduledSendRows[send.id] = (send, nil)
        return true
    }

    public func scheduledSend(id: ScheduledSend.ID) async throws -> ScheduledSend? { scheduledSendRows[id]?.send }

    public func scheduledSends(tokenID: UUID, limit: Int) async throws -> [ScheduledSend] {
        Array(
            scheduledSendRows.values.map(\.send).filter { $0.tokenID == tokenID }
                .sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }.prefix(limit))
    }

    public func cancelScheduledSend(id: ScheduledSend.ID, at date: Date) async throws -> ScheduledSend? {
        guard var row = scheduledSendRows[id] else { return nil }
        guard row.send.status == .scheduled else { return row.send }
        row.send.status = .canceled
        row.send.canceledAt = date
        row.send.updatedAt = date
        row.send.nextAt = nil
        scheduledSendRows[id] = row
        return row.send
    }

    public func deleteScheduledSend(id: ScheduledSend.ID) async throws { scheduledSendRows[id] = nil }

    public func deleteFinishedScheduledSends(finishedBefore: Date, canceledBefore: Date, limit: Int) async throws -> Int {
        let old = scheduledSendRows.values.map(\.send).filter { send in
            switch send.status {
            case .scheduled: false
            case .sent, .failed: send.updatedAt < finishedBefore
            case .canceled: send.updatedAt < canceledBefore
            }
        }.prefix(limit)
        for send in old { scheduledSendRows[send.id] = nil }
        return old.count
    }

    public func claimDueScheduledSends(at now: Date, lease: Lease, limit: Int) async throws -> [ScheduledSend] {
        let due = scheduledSendRows.values.filter { row in
            row.send.status == .scheduled && (row.send.nextAt.map { $0 <= now } ?? false) && (row.lease.map { $0.expiresAt <= now } ?? true)
        }.map(\.send).sorted { ($0.nextAt ?? now) < ($1.nextAt ?? now) }.prefix(limit)
        for send in due { scheduledSendRows[send.id]?.lease = lease }
        return Array(due)
    }

    public func completeScheduledSend(_ send: ScheduledSend, owner: String) async throws -> Bool {
        guard let row = scheduledSendRows[send.id], row.lease?.owner == owner, row.send.status == .scheduled else { return false }
        scheduledSendRows[send.id] = (send, nil)
        return true
    }
}
