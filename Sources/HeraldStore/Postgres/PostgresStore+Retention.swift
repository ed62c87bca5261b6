import Foundation
import HeraldCore
import PostgresNIO

/// Bounded storage (issue 39, section 7; issue 40, section 4) on PostgreSQL: a day whose notifications are all
/// finished and past the retention is dropped whole (``dropFinishedPartitions(before:)``: its partitions of
/// notifications, answers and events; no deleted rows, no vacuum debt). What is left past the retention (finished
/// notifications of a day that still holds a pending one) is deleted in small batches, each one transaction that locks
/// only the rows it deletes (`FOR UPDATE SKIP LOCKED`), so that instances sweeping together never wait for each other.
extension PostgresStore {
    /// Tables whose rows belong to one notification (a `notification_id` column), deleted with it: the one place
    /// where a table that has no trigger of migration 20's kind adds itself (answers and events have one).
    static let notificationDependents: [String] = []

    /// Deletes the notifications `ids` still finished and changed before `cutoff`, with everything that goes with them
    /// (``notificationDependents``), in the caller's transaction. Returns how many.
    func deleteNotifications(ids: [UUID], finishedBefore cutoff: Double, on connection: PostgresConnection) async throws -> Int {
        let deletable = try await execute(
            """
            SELECT id FROM notification WHERE id = ANY(\(ids)) AND status <> 'pending' AND updated_at < \(cutoff)
            FOR UPDATE SKIP LOCKED
            """, on: connection
        ).map { try $0.decode(UUID.self) }
        guard !deletable.isEmpty else { return 0 }
        try await deleteDependents(ofNotificationsIn: "SELECT unnest(\(deletable)::uuid[])", on: connection)
        return try await execute("DELETE FROM notification WHERE id = ANY(\(deletable)) RETURNING id", on: connection).count
    }

    /// Deletes the rows of ``notificationDependents`` of the notifications `selection` (a query of ids) selects.
    private func deleteDependents(ofNotificationsIn selection: PostgresQuery, on connection: PostgresConnection) async throws {
        for table in Self.notificationDependents {
            var query = selection
            query.sql = "DELETE FROM \(table) WHERE notification_id IN (\(selection.sql))"
            try await execute(query, on: connection)
        }
    }

    public func deleteFinishedNotifications(before cutoff: Date, limit: Int) async throws -> Int {
        let seconds = cutoff.timeIntervalSince1970
        // Whole days first; none dropped because the table was busy: nothing row by row either, until the next pass.
        guard let dropped = try await dropFinishedPartitions(before: seconds) else { return 0 }
        guard dropped == 0 else { return dropped }
        // Then, row by row, what a day's drop would have taken a day ago but for a pending notification of its day. A
        // notification of a day that is still to be dropped whole stays until then (at most a day past the retention):
        // deleting it as a row would leave the dead rows and vacuum work that dropping days avoids.
        return try await deleteFinishedRows(before: seconds - 86_400, limit: limit)
    }

    /// Deletes up to `limit` notifications finished and unchanged since before `seconds`, in small transactions.
    private func deleteFinishedRows(before seconds: Double, limit: Int) async throws -> Int {
        let candidates = try await read(
            "SELECT id FROM notification WHERE updated_at < \(seconds) AND status <> 'pending' ORDER BY updated_at LIMIT \(limit)"
        ).map { try $0.decode(UUID.self) }
        guard !candidates.isEmpty else { return 0 }
        let deleted = try await transaction { connection in
            try await self.deleteNotifications(ids: candidates, finishedBefore: seconds, on: connection)
        }
        rowDeletions.count(deleted)
        return deleted
    }

    /// Autovacuum makes deleted rows' space reusable; nothing to give back here.
    public func reclaimSpace() async throws {}

    public func markDevicesSeen(_ ids: [Device.ID], at date: Date) async throws {
        guard !ids.isEmpty else { return }
        let seconds = date.timeIntervalSince1970
        // At most once an hour per device: a device heard from all the time costs no row version per pass.
        try await write(
            "UPDATE device SET last_seen_at = \(seconds) WHERE id = ANY(\(ids)) AND coalesce(last_seen_at, 0) < \(seconds - 3_600)")
    }

    /// The idle rule (``RetentionStore/idleDeviceCount(since:limit:)``) as a `WHERE` clause on `device`.
    private static func idle(since cutoff: Date) -> PostgresQuery {
        let seconds = cutoff.timeIntervalSince1970
        let day = UTCDay(containing: cutoff).description
        return """
            updated_at < \(seconds) AND coalesce(last_seen_at, 0) < \(seconds)
            AND NOT EXISTS (SELECT 1 FROM quota_counter WHERE quota_counter.device_id = device.id AND quota_counter.day >= \(day))
            """
    }

    public func idleDeviceCount(since cutoff: Date, limit: Int) async throws -> Int {
        var query = Self.idle(since: cutoff)
        query.sql = "SELECT count(*) FROM (SELECT 1 FROM device WHERE \(query.sql) LIMIT \(limit)) AS idle"
        return try await read(query).first?.decode(Int.self) ?? 0
    }

    public func deleteIdleDevices(since cutoff: Date, limit: Int) async throws -> [Device.ID] {
        var selection = Self.idle(since: cutoff)
        selection.sql = "SELECT id FROM device WHERE \(selection.sql) LIMIT \(limit) FOR UPDATE SKIP LOCKED"
        let query = selection
        let ids = try await transaction { connection -> [UUID] in
            let ids = try await self.execute(query, on: connection).map { try $0.decode(UUID.self) }
            guard !ids.isEmpty else { return [] }
            try await self.deleteDependents(ofNotificationsIn: "SELECT id FROM notification WHERE device_id = ANY(\(ids))", on: connection)
            // Notifications, counters, API tokens and activities go with the device (ON DELETE CASCADE).
            try await self.execute("DELETE FROM device WHERE id = ANY(\(ids))", on: connection)
            return ids
        }
        for id in ids { devices.invalidate(id: id) }
        if !ids.isEmpty { await presence.devicesChanged(ids) }
        return ids
    }
}
