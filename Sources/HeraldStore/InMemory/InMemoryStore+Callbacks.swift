import Foundation
import HeraldCore

/// The callback outbox in memory: the same rules as the SQLite store's (``CallbackStore``).
extension InMemoryStore {
    public func enqueueCallback(_ callback: CallbackDelivery) async throws {
        guard devices[callback.deviceID] != nil else { throw StoreError.notFound("device") }
        callbackRows[callback.id] = (callback, nil)
    }

    public func callback(id: CallbackDelivery.ID) async throws -> CallbackDelivery? { callbackRows[id]?.callback }

    public func claimDueCallbacks(at now: Date, lease: Lease, limit: Int) async throws -> [CallbackDelivery] {
        let due = callbackRows.values.filter { row in
            row.callback.status == .pending && (row.callback.nextAttemptAt.map { $0 <= now } ?? false)
                && (row.lease.map { $0.expiresAt <= now } ?? true)
        }.map(\.callback).sorted { ($0.nextAttemptAt ?? now, $0.createdAt) < ($1.nextAttemptAt ?? now, $1.createdAt) }.prefix(max(0, limit))
        for callback in due { callbackRows[callback.id]?.lease = lease }
        return Array(due)
    }

    public func completeCallbackAttempt(_ callback: CallbackDelivery, owner: String) async throws -> Bool {
        guard let row = callbackRows[callback.id], row.lease?.owner == owner, row.callback.status == .pending else { return false }
        var saved = row.callback
        saved.status = callback.status
        saved.attempts = callback.attempts
        saved.nextAttemptAt = callback.nextAttemptAt
        saved.lastError = callback.lastError
        saved.updatedAt = callback.updatedAt
        callbackRows[callback.id] = (saved, nil)
        return true
    }

    public func deleteFinishedCallbacks(before date: Date, limit: Int) async throws -> Int {
        let old = callbackRows.values.map(\.callback).filter { $0.status != .pending && $0.updatedAt < date }.prefix(max(0, limit))
        for callback in old { callbackRows[callback.id] = nil }
        return old.count
    }

    public func setTokenCallbackURL(_ url: String?, tokenID: UUID, deviceID: Device.ID, at date: Date) async throws {
        guard devices[deviceID] != nil else { throw StoreError.notFound("device") }
        tokenCallbackURLs[tokenID] = url.map { ($0, deviceID) }
    }

    public func tokenCallbackURL(tokenID: UUID) async throws -> String? { tokenCallbackURLs[tokenID]?.url }
}
