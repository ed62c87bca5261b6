import Foundation
import HeraldCore

/// Receipts in memory: the same rules as the SQLite store's (``ReceiptStore``).
extension InMemoryStore {
    public func insertReceipt(_ receipt: Receipt, maximumActivePerDevice: Int) async throws -> Bool {
        guard devices[receipt.deviceID] != nil else { throw StoreError.notFound("device") }
        let active = receiptRows.values.map(\.receipt).filter {
            $0.deviceID == receipt.deviceID && $0.status == .active && !ReceiptRules.replaces(receipt, $0)
        }
        guard active.count < maximumActivePerDevice else { return false }
        receiptRows[receipt.id] = (receipt, nil)
        return true
    }

    public func activateReceipt(id: Receipt.ID, notificationID: PushNotification.ID, at date: Date) async throws -> [Receipt] {
        guard var row = receiptRows[id] else { return [] }
        row.receipt.notificationID = notificationID
        receiptRows[id] = row
        var replaced: [Receipt] = []
        for var older in receiptRows.values.map(\.receipt) where ReceiptRules.replaces(row.receipt, older) {
            older.status = .replaced
            older.endedAt = date
            receiptRows[older.id] = (older, nil)
            replaced.append(older)
        }
        return replaced
    }

    public func deleteReceipt(id: Receipt.ID) async throws { receiptRows[id] = nil }

    public func receipt(id: Receipt.ID) async throws -> Receipt? { receiptRows[id]?.receipt }

    public func receipts(ids: [Receipt.ID]) async throws -> [Receipt.ID: Receipt] {
        var found: [Receipt.ID: Receipt] = [:]
        for id in ids { found[id] = receiptRows[id]?.receipt }
        return found
    }

    public func activeReceipts(tokenID: UUID) async throws -> [Receipt] {
        receiptRows.values.map(\.receipt).filter { $0.tokenID == tokenID && $0.status == .active }.sorted { $0.createdAt < $1.createdAt }
    }

    public func endReceipt(id: Receipt.ID, _ ending: ReceiptEnding, at date: Date) async throws -> Receipt? {
        guard var receipt = receiptRows[id]?.receipt, receipt.status == .active else { return nil }
        receipt.status = ending.status
        receipt.endedAt = date
        switch ending {
        case .acknowledged(let actionID, let device):
            receipt.actionID = actionID
            receipt.acknowledgedByDevice = device
        case .canceled(let reason):
            receipt.cancelReason = reason
        case .expired:
            break
        }
        receiptRows[id] = (receipt, nil)
        return receipt
    }

    public func claimDueReceipts(at now: Date, lease: Lease, limit: Int) async throws -> [Receipt] {
        let due = receiptRows.values.filter { row in
            row.receipt.status == .active && row.receipt.nextRepeatAt <= now && (row.lease.map { $0.expiresAt <= now } ?? true)
                && (row.receipt.notificationID != nil || row.receipt.createdAt <= now.addingTimeInterval(-ReceiptRules.unsentGrace))
        }.map(\.receipt).sorted { $0.nextRepeatAt < $1.nextRepeatAt }.prefix(limit)
        for receipt in due { receiptRows[receipt.id]?.lease = lease }
        return Array(due)
    }

    public func completeReceiptRepeat(_ receipt: Receipt, owner: String) async throws -> Bool {
        guard var row = receiptRows[receipt.id], row.lease?.owner == owner, row.receipt.status == .active else { return false }
        row.receipt.repeatsSent = receipt.repeatsSent
        row.receipt.nextRepeatAt = receipt.nextRepeatAt
        row.lease = nil
        receiptRows[receipt.id] = row
        return true
    }

    public func deleteEndedReceipts(before cutoff: Date, limit: Int) async throws -> Int {
        let old = receiptRows.values.map(\.receipt).filter { $0.status.isEnded && ($0.endedAt ?? .distantFuture) < cutoff }.prefix(limit)
        for receipt in old { receiptRows[receipt.id] = nil }
        return old.count
    }
}
