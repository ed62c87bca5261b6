import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    public func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] {
        guard !ids.isEmpty else { return [] }
        return try await write(PostgresLeaseStatements.ClaimByID(ids: ids, lease: lease, now: now))
    }

    public func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] {
        try await write(PostgresLeaseStatements.ClaimPending(deviceID: deviceID, lease: lease, now: now, limit: limit))
            .sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
    }

    public func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] {
        try await read(PostgresLeaseStatements.ScheduledAttempts(now: now, limit: limit))
    }

    public func renewLeases(owner: String, until expiry: Date) async throws {
        try await write(PostgresLeaseStatements.RenewLeases(owner: owner, expiry: expiry))
    }

    public func releaseLeases(owner: String) async throws {
        try await write("UPDATE notification SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = \(owner)")
    }

    public func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int {
        guard !platforms.isEmpty else { return 0 }
        let unparked = try await write(
            """
            WITH unparked AS (
                UPDATE notification SET parked = false, next_attempt_at = \(now.timeIntervalSince1970)
                WHERE parked AND status = 'pending' AND EXISTS (
                    SELECT 1 FROM device
                    WHERE device.id = notification.device_id AND device.token IS NOT NULL
                        AND device.platform = ANY(\(platforms.map(\.rawValue).sorted())))
                RETURNING 1)
            SELECT count(*) FROM unparked
            """)
        return try unparked.first?.decode(Int.self) ?? 0
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await read("SELECT \(unescaped: Self.notificationColumns) FROM notification WHERE id = \(id)").first.map(Self.notification)
    }

    public func lease(of id: PushNotification.ID) async throws -> Lease? {
        guard let row = try await read("SELECT lease_owner, lease_expires_at FROM notification WHERE id = \(id)").first,
            case let (owner?, expiry?) = try row.decode((String?, Double?).self)
        else { return nil }
        return Lease(owner: owner, expiresAt: Date(timeIntervalSince1970: expiry))
    }

    public func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] {
        try await read(
            """
            SELECT \(unescaped: Self.notificationColumns) FROM notification WHERE device_id = \(deviceID) AND status = 'pending'
            ORDER BY created_at, id LIMIT \(limit)
            """
        ).map(Self.notification)
    }

    public func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth {
        // Both counts walk the partial index notification_due (pending rows only), at most `limit` entries each.
        let rows = try await read(
            """
            SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending' LIMIT \(limit)) AS pending),
                   (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending'
                                          AND next_attempt_at <= \(now.timeIntervalSince1970) LIMIT \(limit)) AS due)
            """)
        guard let row = rows.first else { return OutboxDepth(pending: 0, due: 0) }
        let (pending, due) = try row.decode((Int, Int).self)
        return OutboxDepth(pending: pending, due: due)
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        try await read("SELECT \(unescaped: Self.counterColumns) FROM quota_counter WHERE device_id = \(deviceID) AND day = \(day)")
            .first.map(Self.counters) ?? QuotaCounters()
    }

    // MARK: Rows

    private static let counterColumns = "attempts, successful, errors, total"

    private static func counters(_ row: PostgresRow) throws -> QuotaCounters {
        let row = row.makeRandomAccess()
        return QuotaCounters(
            attempts: try row.value("attempts"), successful: try row.value("successful"), errors: try row.value("errors"),
            total: try row.value("total"))
    }

    static let notificationColumns = """
        id, device_id, push_type, priority, collapse_id, payload, quota_day, status, attempts, last_error,
        provider_message_id, created_at, updated_at, next_attempt_at, expires_at, live_activity_token, content, rendered_by
        """

    /// A notification from a row that begins with ``notificationColumns`` in their order (more columns may follow),
    /// decoded by position: no lookup of each column's name in every row of the hot path's claims.
    static func notification(_ row: PostgresRow) throws -> PushNotification {
        let columns = try row.decode(
            (UUID, UUID, String, Int, String?, Data, String?, String, Int, String?, String?, Double, Double, Double, Double, String?, Data?,
                String?).self)
        return PushNotification(
            id: columns.0, deviceID: columns.1, pushType: try enumValue(columns.2, column: "push_type"), priority: NotificationPriority(stored: columns.3),
            collapseID: columns.4, payload: columns.5, quotaDay: columns.6, status: try enumValue(columns.7, column: "status"),
            attempts: columns.8, lastError: columns.9, providerMessageID: columns.10, createdAt: Date(timeIntervalSince1970: columns.11),
            updatedAt: Date(timeIntervalSince1970: columns.12), nextAttemptAt: Date(timeIntervalSince1970: columns.13),
            expiresAt: Date(timeIntervalSince1970: columns.14), liveActivityToken: columns.15, renderedBy: columns.17,
            content: columns.16.flatMap(NotificationContent.init(stored:)))
    }

    /// A value of an enumeration stored as its raw text.
    private static func enumValue<Value: RawRepresentable>(_ text: String, column: String) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: text) else { throw CorruptPostgresRow(detail: "unknown value \(text) in \(column)") }
        return value
    }
}
