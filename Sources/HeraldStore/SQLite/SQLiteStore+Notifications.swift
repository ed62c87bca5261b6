import Foundation
import GRDB
import HeraldCore
import Logging
import Synchronization

/// The outbox on SQLite: accepts and outcomes in one commit, claims, leases, the schedule and the counters.
extension SQLiteStore {
    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        let (decisions, deactivated) = try await write { db in
            let decisions = try batch.accepts.map { try Self.accept($0, db) }
            let deactivated = try batch.outcomes.flatMap { try Self.save($0, owner: batch.owner, db) }
            try batch.gate?.pass()  // throws: rolled back
            return (decisions, deactivated)
        }
        for id in deactivated { devices.invalidate(id: id) }
        return decisions
    }

    static func accept(_ request: AcceptRequest, _ db: GRDB.Database) throws -> AcceptDecision {
        let notification = request.notification
        let quota = request.quota
        let deviceID = notification.deviceID.databaseString
        guard
            let counted = try firstRow(
                db.cachedStatement(
                    sql: """
                        INSERT INTO quota_counter (device_id, day, attempts) VALUES (?, ?, ?)
                        ON CONFLICT (device_id, day) DO UPDATE SET attempts = attempts + excluded.attempts
                        RETURNING attempts, successful, errors, total, limit_announced
                        """),
                [deviceID, quota.day, quota.countsAttempt ? 1 : 0], read: QuotaRow.init)
        else { throw StoreError.notFound("quota counter") }
        var counters = counted.counters
        var usedUpQuota = false
        if let refused = try refusal(by: quota, counters: counters, deviceID: deviceID, db) { return refused }
        if let maximum = quota.maximum {
            if counters.successful >= maximum { return .quotaExceeded(counters) }
            guard
                let updated = try firstRow(
                    db.cachedStatement(
                        sql: """
                            UPDATE quota_counter SET successful = successful + 1, total = total + 1,
                                limit_announced = CASE WHEN successful + 1 >= ? THEN 1 ELSE limit_announced END
                            WHERE device_id = ? AND day = ?
                            RETURNING attempts, successful, errors, total, limit_announced
                            """),
                    [maximum, deviceID, quota.day], read: QuotaRow.init)
            else { throw StoreError.notFound("quota counter") }
            counters = updated.counters
            usedUpQuota = !counted.limitAnnounced && updated.limitAnnounced
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status,
                    attempts, last_error, provider_message_id, created_at, updated_at, next_attempt_at, expires_at,
                    live_activity_token, content, rendered_by, lease_owner, lease_expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: try Self.arguments(notification) + [request.lease?.owner, request.lease?.expiresAt.timeIntervalSince1970])
        return .accepted(counters, usedUpQuota: usedUpQuota)
    }

    /// Saves one outcome if `owner` still holds its lease; returns the devices a dead token deactivated.
    static func save(_ outcome: DeliveryOutcome, owner: String, _ db: GRDB.Database) throws -> [Device.ID] {
        let notification = outcome.notification
        guard
            let quotaDay = try firstRow(
                db.cachedStatement(
                    sql: """
                        UPDATE notification SET status = ?, attempts = ?, last_error = ?, provider_message_id = ?,
                            updated_at = ?, next_attempt_at = ?, expires_at = ?, parked = ?,
                            lease_owner = NULL, lease_expires_at = NULL
                        WHERE id = ? AND lease_owner = ? AND status = 'pending'
                        RETURNING quota_day
                        """),
                [
                    notification.status.rawValue, notification.attempts, notification.lastError,
                    notification.providerMessageID, notification.updatedAt.timeIntervalSince1970,
                    notification.nextAttemptAt.timeIntervalSince1970, notification.expiresAt.timeIntervalSince1970,
                    outcome.isParked, notification.id.databaseString, owner,
                ], read: { row -> String? in row[0] })
        else { return [] }  // the lease was lost (taken over) or the notification is gone: nothing to save
        if outcome.releasesQuota, let day = quotaDay {
            try db.cachedStatement(
                sql: """
                    UPDATE quota_counter SET successful = MAX(successful - 1, 0), errors = errors + 1
                    WHERE device_id = ? AND day = ?
                    """
            ).execute(arguments: [notification.deviceID.databaseString, day])
        }
        guard let token = outcome.deadToken else { return [] }
        return try deactivate(
            token: token, usedFor: notification.deviceID, reason: notification.lastError ?? "dead token", at: notification.updatedAt, db)
    }

    public func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification] {
        guard !ids.isEmpty else { return [] }
        return try await write { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE notification SET lease_owner = ?, lease_expires_at = ?
                    WHERE id = ? AND status = 'pending' AND next_attempt_at <= ?
                        AND (lease_owner IS NULL OR lease_expires_at <= ?)
                    RETURNING *
                    """)
            return try ids.compactMap { id in
                try Row.fetchOne(
                    statement,
                    arguments: [
                        lease.owner, lease.expiresAt.timeIntervalSince1970, id.databaseString, now.timeIntervalSince1970,
                        now.timeIntervalSince1970,
                    ]
                ).map(Self.notification)
            }
        }
    }

    public func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification] {
        try await write { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE notification SET lease_owner = ?, lease_expires_at = ?, parked = 0
                        WHERE id IN (
                            SELECT id FROM notification
                            WHERE device_id = ? AND status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= ?)
                            ORDER BY created_at, id LIMIT ?)
                        RETURNING *
                        """),
                arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, deviceID.databaseString, now.timeIntervalSince1970, limit]
            ).map(Self.notification).sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
        }
    }

    public func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt] {
        scheduleReads.add(1, ordering: .relaxed)
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, next_attempt_at, device_id FROM notification
                        WHERE status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= ?)
                        ORDER BY next_attempt_at LIMIT ?
                        """),
                arguments: [now.timeIntervalSince1970, limit]
            ).map { row in
                ScheduledAttempt(
                    id: try Self.uuid(row["id"]), dueAt: Date(timeIntervalSince1970: row["next_attempt_at"]),
                    deviceID: try Self.uuid(row["device_id"]))
            }
        }
    }

    public func renewLeases(owner: String, until expiry: Date) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE notification SET lease_expires_at = ? WHERE lease_owner = ?")
                .execute(arguments: [expiry.timeIntervalSince1970, owner])
        }
    }

    public func releaseLeases(owner: String) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE notification SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?", arguments: [owner])
        }
    }

    public func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int {
        guard !platforms.isEmpty else { return 0 }
        return try await write { db in
            try db.execute(
                sql: Self.unparkStatement(platformCount: platforms.count),
                arguments: [now.timeIntervalSince1970] + StatementArguments(platforms.map(\.rawValue).sorted()))
            return db.changesCount
        }
    }

    /// Runs at every start: it must cost what the parked notifications cost, not what the devices do. It walks the
    /// partial index of parked notifications and looks each one's device up by its key; the earlier form
    /// (`device_id IN (SELECT id FROM device …)`) listed every device first and held the writer for seconds on a
    /// store of a million devices (docs/performance.md, scenario 5).
    static func unparkStatement(platformCount: Int) -> String {
        let placeholders = Array(repeating: "?", count: platformCount).joined(separator: ", ")
        return """
            UPDATE notification INDEXED BY notification_parked SET parked = 0, next_attempt_at = ?
            WHERE parked = 1 AND status = 'pending' AND EXISTS (
                SELECT 1 FROM device
                WHERE device.id = notification.device_id AND device.token IS NOT NULL
                    AND device.platform IN (\(placeholders)))
            """
    }

    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM notification WHERE id = ?"), arguments: [id.databaseString])
                .map(Self.notification)
        }
    }

    public func lease(of id: PushNotification.ID) async throws -> Lease? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT lease_owner, lease_expires_at FROM notification WHERE id = ?", arguments: [id.databaseString]),
                let owner: String = row["lease_owner"], let expiry: Double = row["lease_expires_at"]
            else { return nil }
            return Lease(owner: owner, expiresAt: Date(timeIntervalSince1970: expiry))
        }
    }

    public func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notification WHERE device_id = ? AND status = 'pending'
                    ORDER BY created_at, id LIMIT ?
                    """,
                arguments: [deviceID.databaseString, limit]
            ).map(Self.notification)
        }
    }

    public func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth {
        try await read { db in
            // Both counts walk the partial index notification_due (pending rows only), at most `limit` entries each.
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending' LIMIT ?)),
                               (SELECT COUNT(*) FROM (SELECT 1 FROM notification WHERE status = 'pending' AND next_attempt_at <= ? LIMIT ?))
                        """),
                arguments: [limit, now.timeIntervalSince1970, limit])
            return OutboxDepth(pending: row?[0] ?? 0, due: row?[1] ?? 0)
        }
    }

    public func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters {
        try await read { db in
            try Self.firstRow(
                db.cachedStatement(
                    sql: """
                        SELECT attempts, successful, errors, total, limit_announced FROM quota_counter
                        WHERE device_id = ? AND day = ?
                        """),
                [deviceID.databaseString, day], read: QuotaRow.init
            )?.counters ?? QuotaCounters()
        }
    }
}
