import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        let (decisions, deactivated): ([AcceptDecision], [Device.ID])
        do {
            (decisions, deactivated) = try await transaction { [self] connection in
                try await lockCounters(of: batch, connection)
                var decisions: [AcceptDecision] = []
                for request in batch.accepts { decisions.append(try await accept(request, connection)) }
                var deactivated: [Device.ID] = []
                for outcome in batch.outcomes { deactivated += try await save(outcome, owner: batch.owner, connection) }
                try batch.gate?.pass()  // throws: rolled back; passed: COMMIT follows
                return (decisions, deactivated)
            }
        } catch let error as PostgresStoreError where error.sqlState == "23503" {
            throw StoreError.notFound("device")  // an accept for a device that is gone: nothing of the batch is written
        }
        for id in deactivated { devices.invalidate(id: id) }
        await presence.devicesChanged(deactivated)
        return decisions
    }

    /// Locks the counter rows the batch will write (creating those not there yet) in one order, the same on every
    /// instance: two batches that count for the same devices in different orders then queue one behind the other
    /// instead of deadlocking. Nothing to do for a batch that writes one counter or none.
    private func lockCounters(of batch: WriteBatch, _ connection: PostgresConnection) async throws {
        struct Counter: Hashable {
            var deviceID: Device.ID
            var day: String
        }
        let accepted = batch.accepts.map { Counter(deviceID: $0.notification.deviceID, day: $0.quota.day) }
        let released = batch.outcomes.compactMap { outcome in
            outcome.releasesQuota ? outcome.notification.quotaDay.map { Counter(deviceID: outcome.notification.deviceID, day: $0) } : nil
        }
        let counters = Array(Set(accepted + released))
        guard counters.count > 1 else { return }
        try await execute(
            """
            INSERT INTO quota_counter (device_id, day)
            SELECT device_id, day FROM unnest(\(counters.map(\.deviceID)), \(counters.map(\.day))) AS counter (device_id, day)
            ORDER BY device_id, day
            ON CONFLICT (device_id, day) DO UPDATE SET attempts = quota_counter.attempts
            """, on: connection)
    }

    /// Counts the attempt and, if there is room, the notification, and stores it. The upsert locks the device's
    /// counter row until the transaction ends, so concurrent accepts for one device (from any instance) queue there
    /// and the quota is exact.
    private func accept(_ request: AcceptRequest, _ connection: PostgresConnection) async throws -> AcceptDecision {
        let notification = request.notification
        let quota = request.quota
        let counted = try await execute(
            """
            INSERT INTO quota_counter (device_id, day, attempts) VALUES (\(notification.deviceID), \(quota.day), \(quota.countsAttempt ? 1 : 0))
            ON CONFLICT (device_id, day) DO UPDATE SET attempts = quota_counter.attempts + excluded.attempts
            RETURNING \(unescaped: Self.counterColumns), limit_announced
            """, on: connection)
        guard let counted = counted.first else { throw StoreError.notFound("quota counter") }
        var counters = try Self.counters(counted)
        var usedUpQuota = false
        if let refused = try await refusal(by: quota, counters: counters, deviceID: notification.deviceID, connection) {
            return refused
        }
        if let maximum = quota.maximum {
            if counters.successful >= maximum { return .quotaExceeded(counters) }
            let updated = try await execute(
                """
                UPDATE quota_counter SET successful = successful + 1, total = total + 1,
                    limit_announced = limit_announced OR successful + 1 >= \(maximum)
                WHERE device_id = \(notification.deviceID) AND day = \(quota.day)
                RETURNING \(unescaped: Self.counterColumns), limit_announced
                """, on: connection)
            guard let updated = updated.first else { throw StoreError.notFound("quota counter") }
            counters = try Self.counters(updated)
            let wasAnnounced = try counted.makeRandomAccess().value("limit_announced", as: Bool.self)
            usedUpQuota = try !wasAnnounced && updated.makeRandomAccess().value("limit_announced", as: Bool.self)
        }
        let bindings = try PostgresBindings(
            binding: Self.values(notification) + [request.lease?.owner, request.lease?.expiresAt.timeIntervalSince1970])
        try await execute(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO notification (\(Self.notificationColumns), lease_owner, lease_expires_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
                    """, binds: bindings), on: connection)
        return .accepted(counters, usedUpQuota: usedUpQuota)
    }

    /// The limits an accept meets before its quota: the device's pending backlog (a full one refuses the
    /// notification), and for an exempt notification the day's cap on exempt ones (counted here when there is room).
    /// `nil` when the notification may be stored. Runs while the accept holds the device's counter row, so concurrent
    /// accepts for one device see each other's notifications.
    private func refusal(
        by quota: QuotaRequest, counters: QuotaCounters, deviceID: UUID, _ connection: PostgresConnection
    ) async throws -> AcceptDecision? {
        if let pendingMaximum = quota.pendingMaximum {
            let rows = try await execute(
                """
                SELECT count(*) FROM (SELECT 1 FROM notification WHERE device_id = \(deviceID) AND status = 'pending'
                    LIMIT \(pendingMaximum)) AS pending
                """, on: connection)
            let pending = try rows.first.map { try $0.decode(Int.self) } ?? 0
            if pending >= pendingMaximum { return .backlogFull(counters) }
        }
        if quota.maximum == nil, let exemptMaximum = quota.exemptMaximum {
            let counted = try await execute(
                """
                UPDATE quota_counter SET exempt = exempt + 1
                WHERE device_id = \(deviceID) AND day = \(quota.day) AND exempt < \(exemptMaximum)
                RETURNING exempt
                """, on: connection)
            if counted.isEmpty { return .exemptQuotaExceeded(counters) }
        }
        return nil
    }

    /// Saves one outcome if `owner` still holds its lease; returns the devices a dead token deactivated.
    private func save(_ outcome: DeliveryOutcome, owner: String, _ connection: PostgresConnection) async throws -> [Device.ID] {
        let notification = outcome.notification
        let saved = try await execute(
            """
            UPDATE notification SET status = \(notification.status.rawValue), attempts = \(notification.attempts),
                last_error = \(notification.lastError), provider_message_id = \(notification.providerMessageID),
                updated_at = \(notification.updatedAt.timeIntervalSince1970),
                next_attempt_at = \(notification.nextAttemptAt.timeIntervalSince1970),
                expires_at = \(notification.expiresAt.timeIntervalSince1970), parked = \(outcome.isParked),
                lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(notification.id) AND lease_owner = \(owner) AND status = 'pending'
            RETURNING quota_day
            """, on: connection)
        guard let stored = saved.first else { return [] }  // the lease was lost (taken over) or the notification is gone
        if outcome.releasesQuota, let day = try stored.decode(String?.self) {
            try await execute(
                """
                UPDATE quota_counter SET successful = greatest(successful - 1, 0), errors = errors + 1
                WHERE device_id = \(notification.deviceID) AND day = \(day)
                """, on: connection)
        }
        guard let token = outcome.deadToken else { return [] }
        let deactivation = Self.deactivation(
            token: token, usedFor: notification.deviceID, reason: notification.lastError ?? "dead token", at: notification.updatedAt)
        return try await execute(deactivation, on: connection).map { try $0.decode(UUID.self) }
    }

    /// The sub-select locks the rows it claims and skips those another claim is locking: concurrent claims (from any
    /// instance) never wait for each other and never take the same notification.
    public func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] {
        guard !ids.isEmpty else { return [] }
        let now = now.timeIntervalSince1970
        return try await write(
            """
            UPDATE notification SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970)
            WHERE id IN (
                SELECT id FROM notification
                WHERE id = ANY(\(ids)) AND status = 'pending' AND next_attempt_at <= \(now)
                    AND (lease_owner IS NULL OR lease_expires_at <= \(now))
                FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.notificationColumns)
            """
        ).map(Self.notification)
    }

    public func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] {
        let now = now.timeIntervalSince1970
        return try await write(
            """
            UPDATE notification SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970),
                parked = false
            WHERE id IN (
                SELECT id FROM notification
                WHERE device_id = \(deviceID) AND status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= \(now))
                ORDER BY created_at, id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.notificationColumns)
            """
        ).map(Self.notification).sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
    }

    public func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] {
        try await read(
            """
            SELECT id, next_attempt_at, device_id FROM notification
            WHERE status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= \(now.timeIntervalSince1970))
            ORDER BY next_attempt_at LIMIT \(limit)
            """
        ).map { row in
            let (id, dueAt, deviceID) = try row.decode((UUID, Double, UUID).self)
            return ScheduledAttempt(id: id, dueAt: Date(timeIntervalSince1970: dueAt), deviceID: deviceID)
        }
    }

    public func renewLeases(owner: String, until expiry: Date) async throws {
        try await write("UPDATE notification SET lease_expires_at = \(expiry.timeIntervalSince1970) WHERE lease_owner = \(owner)")
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

    /// `$1` to `$18`, in the order of ``notificationColumns``.
    private static func values(_ notification: PushNotification) throws -> [(any PostgresThrowingDynamicTypeEncodable)?] {
        [
            notification.id, notification.deviceID, notification.pushType.rawValue, notification.priority, notification.collapseID,
            notification.payload, notification.quotaDay, notification.status.rawValue, notification.attempts,
            notification.lastError, notification.providerMessageID, notification.createdAt.timeIntervalSince1970,
            notification.updatedAt.timeIntervalSince1970, notification.nextAttemptAt.timeIntervalSince1970,
            notification.expiresAt.timeIntervalSince1970, notification.liveActivityToken, try notification.content?.encoded(),
            notification.renderedBy,
        ]
    }

    static func notification(_ row: PostgresRow) throws -> PushNotification {
        let row = row.makeRandomAccess()
        return PushNotification(
            id: try row.value("id"), deviceID: try row.value("device_id"), pushType: try row.enumValue("push_type"),
            priority: try row.value("priority"), collapseID: try row.value("collapse_id"), payload: try row.value("payload"),
            quotaDay: try row.value("quota_day"), status: try row.enumValue("status"), attempts: try row.value("attempts"),
            lastError: try row.value("last_error"), providerMessageID: try row.value("provider_message_id"),
            createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            nextAttemptAt: try row.date("next_attempt_at"), expiresAt: try row.date("expires_at"),
            liveActivityToken: try row.value("live_activity_token"), renderedBy: try row.value("rendered_by"),
            content: try row.value("content", as: Data?.self).flatMap(NotificationContent.init(stored:)))
    }
}
