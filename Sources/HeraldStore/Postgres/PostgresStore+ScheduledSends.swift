import Foundation
import HeraldCore
import PostgresNIO

/// Scheduled sends (issue 39, section 5) on PostgreSQL: claimed with `FOR UPDATE SKIP LOCKED` and a lease, so that
/// with several instances each due send is taken by one, and a crashed instance's by another once its lease expires.
extension PostgresStore {
    private static let scheduledColumns = """
        id, device_id, token_id, notification, send_at, cron, time_zone, until_at, max_count, next_at, status, sent_count,
        last_error, last_notification_id, created_at, updated_at, canceled_at
        """

    private static func scheduledSend(_ row: PostgresRow) throws -> ScheduledSend {
        let row = row.makeRandomAccess()
        var recurrence: ScheduledSend.Recurrence?
        if let cron = try row.value("cron", as: String?.self), let zone = try row.value("time_zone", as: String?.self) {
            recurrence = .init(cron: cron, timeZone: zone, until: try row.optionalDate("until_at"), count: try row.value("max_count"))
        }
        return ScheduledSend(
            id: try row.value("id"), deviceID: try row.value("device_id"), tokenID: try row.value("token_id"),
            notification: try row.value("notification"), sendAt: try row.optionalDate("send_at"), recurrence: recurrence,
            nextAt: try row.optionalDate("next_at"), status: try row.enumValue("status"), sentCount: try row.value("sent_count"),
            lastError: try row.value("last_error"), lastNotificationID: try row.value("last_notification_id"),
            createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"), canceledAt: try row.optionalDate("canceled_at"))
    }

    public func insertScheduledSend(_ send: ScheduledSend, maximumPending: Int) async throws -> Bool {
        try await transaction { connection in
            // The device's row, locked: two instances scheduling for one device count one after the other.
            guard try await !self.execute("SELECT id FROM device WHERE id = \(send.deviceID) FOR UPDATE", on: connection).isEmpty else {
                throw StoreError.notFound("device")
            }
            let pending = try await self.execute(
                "SELECT count(*) FROM scheduled_send WHERE device_id = \(send.deviceID) AND status = 'scheduled'", on: connection
            ).first?.decode(Int.self) ?? 0
            guard pending < maximumPending else { return false }
            try await self.execute(
                """
                INSERT INTO scheduled_send (\(unescaped: Self.scheduledColumns)) VALUES (
                    \(send.id), \(send.deviceID), \(send.tokenID), \(send.notification), \(send.sendAt?.timeIntervalSince1970),
                    \(send.recurrence?.cron), \(send.recurrence?.timeZone), \(send.recurrence?.until?.timeIntervalSince1970),
                    \(send.recurrence?.count), \(send.nextAt?.timeIntervalSince1970), \(send.status.rawValue), \(send.sentCount),
                    \(send.lastError), \(send.lastNotificationID), \(send.createdAt.timeIntervalSince1970),
                    \(send.updatedAt.timeIntervalSince1970), \(send.canceledAt?.timeIntervalSince1970))
                """, on: connection)
            return true
        }
    }

    public func scheduledSend(id: ScheduledSend.ID) async throws -> ScheduledSend? {
        try await read("SELECT \(unescaped: Self.scheduledColumns) FROM scheduled_send WHERE id = \(id)").first.map(Self.scheduledSend)
    }

    public func scheduledSends(tokenID: UUID, limit: Int) async throws -> [ScheduledSend] {
        try await read(
            """
            SELECT \(unescaped: Self.scheduledColumns) FROM scheduled_send WHERE token_id = \(tokenID)
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """
        ).map(Self.scheduledSend)
    }

    public func cancelScheduledSend(id: ScheduledSend.ID, at date: Date) async throws -> ScheduledSend? {
        let seconds = date.timeIntervalSince1970
        try await write(
            """
            UPDATE scheduled_send SET status = 'canceled', canceled_at = \(seconds), updated_at = \(seconds), next_at = NULL
            WHERE id = \(id) AND status = 'scheduled'
            """)
        return try await scheduledSend(id: id)
    }

    public func deleteScheduledSend(id: ScheduledSend.ID) async throws {
        try await write("DELETE FROM scheduled_send WHERE id = \(id)")
    }

    public func deleteFinishedScheduledSends(finishedBefore: Date, canceledBefore: Date, limit: Int) async throws -> Int {
        let (finished, canceled) = (finishedBefore.timeIntervalSince1970, canceledBefore.timeIntervalSince1970)
        let condition = "(status IN ('sent', 'failed') AND updated_at < $1) OR (status = 'canceled' AND updated_at < $2)"
        var binds = PostgresBindings()
        binds.append(finished)
        binds.append(canceled)
        let any = try await read(PostgresQuery(unsafeSQL: "SELECT EXISTS (SELECT 1 FROM scheduled_send WHERE \(condition))", binds: binds))
        guard try any.first?.decode(Bool.self) == true else { return 0 }
        binds.append(limit)
        return try await write(
            PostgresQuery(
                unsafeSQL: """
                    DELETE FROM scheduled_send WHERE id IN (
                        SELECT id FROM scheduled_send WHERE \(condition) LIMIT $3 FOR UPDATE SKIP LOCKED)
                    RETURNING id
                    """, binds: binds)
        ).count
    }

    public func claimDueScheduledSends(at now: Date, lease: Lease, limit: Int) async throws -> [ScheduledSend] {
        let seconds = now.timeIntervalSince1970
        // Read first: nothing is written while nothing is due (every instance asks every second).
        let due = try await read("SELECT EXISTS (SELECT 1 FROM scheduled_send WHERE status = 'scheduled' AND next_at <= \(seconds))")
        guard try due.first?.decode(Bool.self) == true else { return [] }
        return try await write(
            """
            UPDATE scheduled_send SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970)
            WHERE id IN (
                SELECT id FROM scheduled_send
                WHERE status = 'scheduled' AND next_at <= \(seconds) AND (lease_owner IS NULL OR lease_expires_at <= \(seconds))
                ORDER BY next_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.scheduledColumns)
            """
        ).map(Self.scheduledSend).sorted { ($0.nextAt ?? now) < ($1.nextAt ?? now) }
    }

    public func completeScheduledSend(_ send: ScheduledSend, owner: String) async throws -> Bool {
        try await !write(
            """
            UPDATE scheduled_send SET next_at = \(send.nextAt?.timeIntervalSince1970), status = \(send.status.rawValue),
                sent_count = \(send.sentCount), last_error = \(send.lastError), last_notification_id = \(send.lastNotificationID),
                updated_at = \(send.updatedAt.timeIntervalSince1970), lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(send.id) AND lease_owner = \(owner) AND status = 'scheduled'
            RETURNING id
            """
        ).isEmpty
    }
}
