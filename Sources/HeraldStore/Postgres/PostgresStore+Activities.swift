import Foundation
import HeraldCore
import PostgresNIO

/// PushWard activities. A change locks the device's row (`FOR NO KEY UPDATE`: concurrent changes of one device's
/// activities queue there, from every instance, so inserts count the 50 and 5 limits right) and the device's activity
/// rows (`FOR UPDATE`: a claim skips them meanwhile, so a claim's lease is never overwritten by a change that read the
/// row before it).
extension PostgresStore {
    public func activities(deviceID: Device.ID) async throws -> [ActivityRecord] {
        try await read("SELECT \(unescaped: Self.activityColumns) FROM activity WHERE device_id = \(deviceID) ORDER BY slug")
            .map(Self.activity)
    }

    public func activity(deviceID: Device.ID, slug: String) async throws -> ActivityRecord? {
        try await read("SELECT \(unescaped: Self.activityColumns) FROM activity WHERE device_id = \(deviceID) AND slug = \(slug)")
            .first.map(Self.activity)
    }

    public func changeActivities<Result: Sendable>(
        deviceID: Device.ID, _ change: @escaping @Sendable ([ActivityRecord]) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await transaction { [self] connection in
            let device = try await execute("SELECT 1 FROM device WHERE id = \(deviceID) FOR NO KEY UPDATE", on: connection)
            guard !device.isEmpty else { throw StoreError.notFound("device") }
            let current = try await execute(
                "SELECT \(unescaped: Self.activityColumns) FROM activity WHERE device_id = \(deviceID) ORDER BY slug FOR UPDATE",
                on: connection
            ).map(Self.activity)
            let (writes, result) = try change(current)
            try await write(writes, deviceID: deviceID, on: connection)
            return result
        }
    }

    /// Locks the device's row as ``changeActivities(deviceID:_:)`` does, then only the activity and the device's other
    /// ongoing ones (`FOR UPDATE`), and counts the rest from the `state` column.
    public func changeActivity<Result: Sendable>(
        deviceID: Device.ID, slug: String, _ change: @escaping @Sendable (ActivityNeighbourhood) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await transaction { [self] connection in
            let device = try await execute("SELECT 1 FROM device WHERE id = \(deviceID) FOR NO KEY UPDATE", on: connection)
            guard !device.isEmpty else { throw StoreError.notFound("device") }
            let (ongoing, tombstone) = (ActivityRecord.ongoingState, ActivityRecord.tombstoneState)
            let record = try await execute(
                "SELECT \(unescaped: Self.activityColumns) FROM activity WHERE device_id = \(deviceID) AND slug = \(slug) FOR UPDATE",
                on: connection
            ).first.map(Self.activity)
            let others = try await execute(
                """
                SELECT \(unescaped: Self.columnsWithoutExtras) FROM activity
                WHERE device_id = \(deviceID) AND state = \(ongoing) AND slug <> \(slug) ORDER BY slug FOR UPDATE
                """, on: connection
            ).map(Self.activity)
            let count = try await execute(
                "SELECT count(*) FROM activity WHERE device_id = \(deviceID) AND state <> \(tombstone)", on: connection
            ).first?.decode(Int.self) ?? 0
            let (writes, result) = try change(ActivityNeighbourhood(record: record, otherOngoing: others, activityCount: count))
            try await write(writes, deviceID: deviceID, on: connection)
            return result
        }
    }

    public func claimDueActivities(at now: Date, lease: Lease, limit: Int) async throws -> [ActivityRecord] {
        let now = now.timeIntervalSince1970
        return try await write(
            """
            UPDATE activity SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970)
            WHERE (device_id, slug) IN (
                SELECT device_id, slug FROM activity
                WHERE (push_due_at <= \(now) OR next_due_at <= \(now)) AND (lease_owner IS NULL OR lease_expires_at <= \(now))
                ORDER BY least(push_due_at, next_due_at), slug LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.columnsWithoutExtras)
            """
        ).map(Self.activity).sorted { ($0.dueAt ?? .distantPast, $0.slug) < ($1.dueAt ?? .distantPast, $1.slug) }
    }

    public func releaseActivityLeases(owner: String) async throws {
        try await write("UPDATE activity SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = \(owner)")
    }

    public func nextActivityDue() async throws -> Date? {
        try await read("SELECT least(min(push_due_at), min(next_due_at)) FROM activity").first?
            .decode(Double?.self).map(Date.init(timeIntervalSince1970:))
    }

    // MARK: Rows

    /// Every column but `extras` (eviction candidates and claims read no extras).
    private static let columnsWithoutExtras = """
        device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version, pushed_version,
        pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token, lease_owner,
        lease_expires_at, pushed_event
        """
    private static let activityColumns = columnsWithoutExtras + ", extras"

    /// Writes a change's deletions and upserts of `deviceID`'s activities: at most two statements, whatever their
    /// number (``PostgresActivityUpserts``). Of two upserts of one slug the last is written, as if one after the other.
    private func write(_ writes: ActivityWrites, deviceID: Device.ID, on connection: PostgresConnection) async throws {
        if !writes.deletions.isEmpty {
            try await execute("DELETE FROM activity WHERE device_id = \(deviceID) AND slug = ANY(\(writes.deletions))", on: connection)
        }
        var last: [String: Int] = [:]
        let upserts = writes.upserts.filter { $0.deviceID == deviceID }
        for (index, record) in upserts.enumerated() { last[record.slug] = index }
        let records = upserts.enumerated().filter { last[$0.element.slug] == $0.offset }.map(\.element)
        if !records.isEmpty { try await run(PostgresActivityUpserts(records: records), on: connection) }
    }

    private static func activity(_ row: PostgresRow) throws -> ActivityRecord {
        let row = row.makeRandomAccess()
        let leaseOwner = try row.value("lease_owner", as: String?.self)
        let leaseExpiry = try row.optionalDate("lease_expires_at")
        return ActivityRecord(
            deviceID: try row.value("device_id"), slug: try row.value("slug"), state: try row.value("state"),
            priority: try row.value("priority"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            document: try row.value("document"), extras: row.contains("extras") ? try row.value("extras", as: Data?.self) : nil,
            extrasRead: row.contains("extras"), nextDueAt: try row.optionalDate("next_due_at"), version: try row.value("version"),
            pushedVersion: try row.value("pushed_version"), pendingPush: try row.value("pending_push"),
            pushDueAt: try row.optionalDate("push_due_at"), pushedState: try row.value("pushed_state"),
            pushedTimestamp: try row.value("pushed_timestamp"),
            pushedEvent: try row.value("pushed_event", as: String?.self).flatMap(LiveActivityMessage.Event.init(rawValue:)),
            inFlightNotification: try row.value("in_flight_notification"),
            updateToken: try row.value("update_token"),
            lease: leaseOwner.map { Lease(owner: $0, expiresAt: leaseExpiry ?? .distantPast) })
    }
}
