import Foundation
import HeraldCore
import PostgresNIO

/// The callback outbox (issue 39, section 4) on PostgreSQL: claimed with `FOR UPDATE SKIP LOCKED` and a lease, so that
/// with several instances each due attempt is made by one, and a crashed instance's by another once its lease expires.
extension PostgresStore {
    private static let callbackColumns = """
        id, device_id, token_id, url, event, body, attempts, next_attempt_at, status, last_error, created_at, updated_at
        """

    private static func callback(_ row: PostgresRow) throws -> CallbackDelivery {
        let row = row.makeRandomAccess()
        return CallbackDelivery(
            id: try row.value("id"), deviceID: try row.value("device_id"), tokenID: try row.value("token_id"), url: try row.value("url"),
            event: try row.enumValue("event"), body: try row.value("body"), attempts: try row.value("attempts"),
            nextAttemptAt: try row.optionalDate("next_attempt_at"), status: try row.enumValue("status"), lastError: try row.value("last_error"),
            createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }

    public func enqueueCallback(_ callback: CallbackDelivery) async throws {
        // One statement: stored only while its device exists (a deleted device's callbacks go with it).
        let inserted = try await write(
            """
            INSERT INTO callback (\(unescaped: Self.callbackColumns))
            SELECT \(callback.id), \(callback.deviceID), \(callback.tokenID), \(callback.url), \(callback.event.rawValue), \(callback.body),
                \(callback.attempts), \(callback.nextAttemptAt?.timeIntervalSince1970), \(callback.status.rawValue), \(callback.lastError),
                \(callback.createdAt.timeIntervalSince1970), \(callback.updatedAt.timeIntervalSince1970)
            WHERE EXISTS (SELECT 1 FROM device WHERE id = \(callback.deviceID))
            RETURNING id
            """)
        guard !inserted.isEmpty else { throw StoreError.notFound("device") }
    }

    public func callback(id: CallbackDelivery.ID) async throws -> CallbackDelivery? {
        try await read("SELECT \(unescaped: Self.callbackColumns) FROM callback WHERE id = \(id)").first.map(Self.callback)
    }

    public func claimDueCallbacks(at now: Date, lease: Lease, limit: Int) async throws -> [CallbackDelivery] {
        let seconds = now.timeIntervalSince1970
        // Read first: nothing is written while nothing is due (every instance asks every second).
        let due = try await read("SELECT EXISTS (SELECT 1 FROM callback WHERE status = 'pending' AND next_attempt_at <= \(seconds))")
        guard try due.first?.decode(Bool.self) == true else { return [] }
        return try await write(
            """
            UPDATE callback SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970)
            WHERE id IN (
                SELECT id FROM callback
                WHERE status = 'pending' AND next_attempt_at <= \(seconds) AND (lease_owner IS NULL OR lease_expires_at <= \(seconds))
                ORDER BY next_attempt_at, created_at LIMIT \(max(0, limit)) FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.callbackColumns)
            """
        ).map(Self.callback).sorted { ($0.nextAttemptAt ?? now, $0.createdAt) < ($1.nextAttemptAt ?? now, $1.createdAt) }
    }

    public func completeCallbackAttempt(_ callback: CallbackDelivery, owner: String) async throws -> Bool {
        try await !write(
            """
            UPDATE callback SET status = \(callback.status.rawValue), attempts = \(callback.attempts),
                next_attempt_at = \(callback.nextAttemptAt?.timeIntervalSince1970), last_error = \(callback.lastError),
                updated_at = \(callback.updatedAt.timeIntervalSince1970), lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(callback.id) AND lease_owner = \(owner) AND status = 'pending'
            RETURNING id
            """
        ).isEmpty
    }

    public func deleteFinishedCallbacks(before date: Date, limit: Int) async throws -> Int {
        let seconds = date.timeIntervalSince1970
        let any = try await read("SELECT EXISTS (SELECT 1 FROM callback WHERE status <> 'pending' AND updated_at < \(seconds))")
        guard try any.first?.decode(Bool.self) == true else { return 0 }
        return try await write(
            """
            DELETE FROM callback WHERE id IN (
                SELECT id FROM callback WHERE status <> 'pending' AND updated_at < \(seconds) LIMIT \(max(0, limit)) FOR UPDATE SKIP LOCKED)
            RETURNING id
            """
        ).count
    }

    public func setTokenCallbackURL(_ url: String?, tokenID: UUID, deviceID: Device.ID, at date: Date) async throws {
        guard let url else {
            try await write("DELETE FROM token_callback WHERE token_id = \(tokenID)")
            return
        }
        let stored = try await write(
            """
            INSERT INTO token_callback (token_id, device_id, url, updated_at)
            SELECT \(tokenID), \(deviceID), \(url), \(date.timeIntervalSince1970) WHERE EXISTS (SELECT 1 FROM device WHERE id = \(deviceID))
            ON CONFLICT (token_id) DO UPDATE SET url = excluded.url, updated_at = excluded.updated_at
            RETURNING token_id
            """)
        guard !stored.isEmpty else { throw StoreError.notFound("device") }
    }

    public func tokenCallbackURL(tokenID: UUID) async throws -> String? {
        try await read("SELECT url FROM token_callback WHERE token_id = \(tokenID)").first?.decode(String.self)
    }
}
