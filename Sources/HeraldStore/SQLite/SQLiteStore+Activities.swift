import Foundation
import GRDB
import HeraldCore
import Synchronization

/// PushWard activities: SQLite runs one write transaction at a time, so a change (read, decide, write) of one
/// device's activities can never interleave with another's or with a claim.
extension SQLiteStore {
    public func activities(deviceID: Device.ID) async throws -> [ActivityRecord] {
        try await read { db in try Self.activities(deviceID: deviceID, db) }
    }

    public func activity(deviceID: Device.ID, slug: String) async throws -> ActivityRecord? {
        try await activityReads.submit(ActivityRead(deviceID: deviceID, slug: slug, reach: .record)).record
    }

    public func changeActivities<Result: Sendable>(
        deviceID: Device.ID, _ change: @escaping @Sendable ([ActivityRecord]) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await write { [activityRows] db in
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM device WHERE id = ?"),
                arguments: [deviceID.databaseString]) != nil else {
                throw StoreError.notFound("device")
            }
            let (writes, result) = try change(try Self.activities(deviceID: deviceID, db))
            try Self.apply(writes, deviceID: deviceID, db)
            activityRows.forgetAll()
            return result
        }
    }

    /// Optimistic, so that decoding and encoding never hold the single writer: the neighbourhood is read (a batch of
    /// reads on the writer's connection) and `change` runs outside any transaction; the write (a batch of writes in one
    /// transaction, ``ActivityWrite``) reads the neighbourhood again (rows, no JSON decoded) and writes only if it is
    /// unchanged. After a few lost races the change runs inside the writer, so a busy device still makes progress.
    public func changeActivity<Result: Sendable>(
        deviceID: Device.ID, slug: String, _ change: @escaping @Sendable (ActivityNeighbourhood) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await self.change(ActivityRead(deviceID: deviceID, slug: slug, reach: .neighbourhood), change)
    }

    /// Reads and compares only the activity's own row (no device check, no other ongoing activities, no count); with
    /// `decideInWriter`, `change` runs in the write batch's transaction on the row as it is there (one visit to the
    /// writer, no read before).
    public func changeActivityRecord<Result: Sendable>(
        deviceID: Device.ID, slug: String, decideInWriter: Bool,
        _ change: @escaping @Sendable (ActivityRecord?) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        let read = ActivityRead(deviceID: deviceID, slug: slug, reach: .record)
        guard decideInWriter else {
            return try await self.change(read) { neighbourhood in
                let (writes, result) = try change(neighbourhood.record)
                return (writes.only(slug), result)
            }
        }
        let decided = DecidedResult<Result>()
        _ = try await activityWrites.submit(
            ActivityWrite(read: read, kind: .decided { record in
                let (writes, result) = try change(record)
                decided.value.withLock { $0 = result }
                return writes.only(slug)
            }))
        guard let result = decided.value.withLock({ $0 }) else { throw StoreError.notFound("activity change") }
        return result
    }

    /// The optimistic change (``changeActivity(deviceID:slug:_:)``). A change of the row alone decides first on the row the writer last read or wrote (``ActivityRowCache``): no
    /// read before the write, whose check finds a row that changed since. A decision on a kept row that writes nothing
    /// is made again on the row read.
    private func change<Result: Sendable>(
        _ read: ActivityRead, _ change: @escaping @Sendable (ActivityNeighbourhood) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        var kept = read.reach == .record ? activityRows.record(deviceID: read.deviceID, slug: read.slug) : nil
        for _ in 0..<Self.optimisticChangeAttempts {
            let seen: ActivityNeighbourhood
            if let record = kept {
                seen = ActivityNeighbourhood(record: record, activityCount: 0)
            } else {
                seen = try await activityReads.submit(read)
            }
            let fromCache = kept != nil
            kept = nil
            let (writes, result) = try change(seen)
            // Nothing to write (a decision that changes nothing): no write transaction.
            if writes.upserts.isEmpty, writes.deletions.isEmpty {
                if fromCache { continue }
                return result
            }
            if try await activityWrites.submit(ActivityWrite(read: read, kind: .checked(seen: seen, writes: writes))) { return result }
        }
        return try await write { [activityRows] db in
            let (writes, result) = try change(try Self.neighbourhood(read, db))
            try Self.apply(writes, deviceID: read.deviceID, db)
            for slug in writes.deletions + writes.upserts.map(\.slug) { activityRows.forget(deviceID: read.deviceID, slug: slug) }
            return result
        }
    }

    /// Tries of ``changeActivity(deviceID:slug:_:)`` outside the writer before one inside it.
    static let optimisticChangeAttempts = 3

    public func claimDueActivities(at now: Date, lease: Lease, limit: Int) async throws -> [ActivityRecord] {
        try await write { [activityRows] db in
            let time = now.timeIntervalSince1970
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                    SELECT rowid AS row_id, \(Self.columnsWithoutExtras) FROM activity
                    WHERE (push_due_at <= ? OR next_due_at <= ?) AND (lease_owner IS NULL OR lease_expires_at <= ?)
                    ORDER BY min(coalesce(push_due_at, next_due_at), coalesce(next_due_at, push_due_at)), slug LIMIT ?
                    """), arguments: [time, time, time, limit])
            return try rows.compactMap { row -> ActivityRecord? in
                guard var record = try? Self.activity(row, from: 1) else {
                    // A row no record can be made of is set aside (never due again), not claimed every pass.
                    try db.cachedStatement(sql: "UPDATE activity SET push_due_at = NULL, next_due_at = NULL WHERE rowid = ?")
                        .execute(arguments: [row["row_id"] as Int64?])
                    return nil
                }
                record.lease = lease
                activityRows.leased(deviceID: record.deviceID, slug: record.slug, lease)
                try db.cachedStatement(sql: "UPDATE activity SET lease_owner = ?, lease_expires_at = ? WHERE device_id = ? AND slug = ?")
                    .execute(arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, record.deviceID.databaseString, record.slug])
                return record
            }
        }
    }

    public func releaseActivityLeases(owner: String) async throws {
        try await write { [activityRows] db in
            try db.execute(sql: "UPDATE activity SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?", arguments: [owner])
            activityRows.forgetAll()
        }
    }

    public func nextActivityDue() async throws -> Date? {
        try await read { db in
            let next = try Double.fetchOne(db.cachedStatement(sql: """
                    SELECT min(due) FROM (
                        SELECT min(push_due_at) AS due FROM activity UNION ALL SELECT min(next_due_at) AS due FROM activity)
                    """))
            return next.map(Date.init(timeIntervalSince1970:))
        }
    }

    // MARK: Rows

    private static func activities(deviceID: Device.ID, _ db: GRDB.Database) throws -> [ActivityRecord] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(activityColumns) FROM activity WHERE device_id = ? ORDER BY slug"),
            arguments: [deviceID.databaseString])
            .map { try activity($0) }
    }

    /// Every column but `extras` (eviction candidates and claims read no extras), in the order ``activity(_:from:)``
    /// decodes them.
    static let columnsWithoutExtras = """
        device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version, pushed_version,
        pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token, lease_owner,
        lease_expires_at, pushed_event
        """

    /// Every column, `extras` last.
    static let activityColumns = columnsWithoutExtras + ", extras"

    /// An upsert that writes `extras` only when the record read them (the last argument).
    static let upsertSQL = """
        INSERT INTO activity (\(columnsWithoutExtras), extras)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (device_id, slug) DO UPDATE SET
            state = excluded.state, priority = excluded.priority, created_at = excluded.created_at,
            updated_at = excluded.updated_at, document = excluded.document, next_due_at = excluded.next_due_at,
            version = excluded.version, pushed_version = excluded.pushed_version, pending_push = excluded.pending_push,
            push_due_at = excluded.push_due_at, pushed_state = excluded.pushed_state,
            pushed_timestamp = excluded.pushed_timestamp, in_flight_notification = excluded.in_flight_notification,
            update_token = excluded.update_token, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
            pushed_event = excluded.pushed_event,
            extras = CASE WHEN ? THEN excluded.extras ELSE activity.extras END
        """

    static func arguments(_ record: ActivityRecord) -> StatementArguments {
        [
            record.deviceID.databaseString, record.slug, record.state, record.priority, record.createdAt.timeIntervalSince1970,
            record.updatedAt.timeIntervalSince1970, record.document, record.nextDueAt?.timeIntervalSince1970, record.version,
            record.pushedVersion, record.pendingPush, record.pushDueAt?.timeIntervalSince1970, record.pushedState,
            record.pushedTimestamp, record.inFlightNotification?.databaseString, record.updateToken, record.lease?.owner,
            record.lease?.expiresAt.timeIntervalSince1970, record.pushedEvent?.rawValue, record.extras, record.extrasRead,
        ]
    }
}
