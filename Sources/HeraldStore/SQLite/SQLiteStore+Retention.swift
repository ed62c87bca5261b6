import Foundation
import GRDB
import HeraldCore
import Logging

/// Bounded storage (issue 39, section 7): what the ``RetentionSweeper`` asks of the SQLite file.
///
/// Each deletion first reads the ids on a reader (nothing is written when there is nothing to delete), then deletes
/// them in one short write transaction that checks the rule again (a notification retried in between stays).
extension SQLiteStore {
    /// Tables whose rows belong to one notification (a `notification_id` column), deleted with it. The one place where
    /// what goes with a notification is listed: answers, events and receipts add their table here.
    static let notificationDependents: [String] = []

    /// Deletes the notifications `ids` and everything that goes with them (``notificationDependents``); only those
    /// still finished and changed before `cutoff`. Returns how many notifications were deleted.
    static func deleteNotifications(ids: [String], finishedBefore cutoff: Date, _ db: GRDB.Database) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let marks = databaseQuestionMarks(count: ids.count)
        let arguments = StatementArguments(ids) + [cutoff.timeIntervalSince1970]
        let deletable = try String.fetchAll(
            db, sql: "SELECT id FROM notification WHERE id IN (\(marks)) AND status != 'pending' AND updated_at < ?", arguments: arguments)
        guard !deletable.isEmpty else { return 0 }
        let deletableMarks = databaseQuestionMarks(count: deletable.count)
        for table in notificationDependents {
            try db.execute(sql: "DELETE FROM \(table) WHERE notification_id IN (\(deletableMarks))", arguments: StatementArguments(deletable))
        }
        try db.execute(sql: "DELETE FROM notification WHERE id IN (\(deletableMarks))", arguments: StatementArguments(deletable))
        return db.changesCount
    }

    public func deleteFinishedNotifications(before cutoff: Date, limit: Int) async throws -> Int {
        let ids = try await read { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: "SELECT id FROM notification WHERE updated_at < ? AND status != 'pending' ORDER BY updated_at LIMIT ?"),
                arguments: [cutoff.timeIntervalSince1970, limit])
        }
        guard !ids.isEmpty else { return 0 }
        return try await write { db in try Self.deleteNotifications(ids: ids, finishedBefore: cutoff, db) }
    }

    /// Free pages beyond a reserve of a tenth of the file (at least 1 MiB of pages) go back to the file system
    /// (`PRAGMA incremental_vacuum`); the reserve takes the next notifications without growing the file again.
    public func reclaimSpace() async throws {
        let (free, total) = try await read { db in
            (try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0)
        }
        let reserve = max(256, total / 10)
        guard free > reserve else { return }
        try await write { db in try db.execute(sql: "PRAGMA incremental_vacuum(\(free - reserve))") }
    }

    /// Pages in the file and free pages in it (tests: the file stays bounded).
    public func pageCounts() async throws -> (total: Int, free: Int) {
        try await read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0)
        }
    }

    public func markDevicesSeen(_ ids: [Device.ID], at date: Date) async throws {
        guard !ids.isEmpty else { return }
        // Written at most once an hour per device: a device heard from all the time costs no write per pass.
        try await write { db in
            let statement = try db.cachedStatement(
                sql: "UPDATE device SET last_seen_at = ? WHERE id = ? AND coalesce(last_seen_at, 0) < ?")
            for id in ids {
                try statement.execute(arguments: [date.timeIntervalSince1970, id.databaseString, date.timeIntervalSince1970 - 3_600])
            }
        }
    }

    /// The rule of ``RetentionStore/idleDeviceCount(since:limit:)`` in SQL: `?` the cutoff (twice), its UTC day.
    static let idleDevices = """
        FROM device WHERE updated_at < ? AND coalesce(last_seen_at, 0) < ?
            AND NOT EXISTS (SELECT 1 FROM quota_counter WHERE quota_counter.device_id = device.id AND quota_counter.day >= ?)
        """

    static func idleArguments(_ cutoff: Date) -> StatementArguments {
        [cutoff.timeIntervalSince1970, cutoff.timeIntervalSince1970, UTCDay(containing: cutoff).description]
    }

    public func idleDeviceCount(since cutoff: Date, limit: Int) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM (SELECT 1 \(Self.idleDevices) LIMIT ?)", arguments: Self.idleArguments(cutoff) + [limit]) ?? 0
        }
    }

    public func deleteIdleDevices(since cutoff: Date, limit: Int) async throws -> [Device.ID] {
        let candidates = try await read { db in
            try String.fetchAll(db, sql: "SELECT id \(Self.idleDevices) LIMIT ?", arguments: Self.idleArguments(cutoff) + [limit])
        }
        guard !candidates.isEmpty else { return [] }
        let deleted = try await write { db -> [String] in
            // Checked again in the transaction: a device that registered or was sent to in between stays.
            let marks = databaseQuestionMarks(count: candidates.count)
            let ids = try String.fetchAll(
                db, sql: "SELECT id \(Self.idleDevices) AND id IN (\(marks))", arguments: Self.idleArguments(cutoff) + StatementArguments(candidates))
            guard !ids.isEmpty else { return [] }
            let idMarks = databaseQuestionMarks(count: ids.count)
            let notifications = try String.fetchAll(
                db, sql: "SELECT id FROM notification WHERE device_id IN (\(idMarks))", arguments: StatementArguments(ids))
            for table in Self.notificationDependents where !notifications.isEmpty {
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE notification_id IN (\(databaseQuestionMarks(count: notifications.count)))",
                    arguments: StatementArguments(notifications))
            }
            // Notifications, counters, API tokens and activities go with the device (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM device WHERE id IN (\(idMarks))", arguments: StatementArguments(ids))
            return ids
        }
        let ids = try deleted.map(Self.uuid)
        for id in ids { devices.invalidate(id: id) }
        if !ids.isEmpty {
            // Their activities and API tokens went with them.
            activityRows.forgetAll()
            apiTokenCache.forgetAll()
        }
        return ids
    }

    /// Switches the file to incremental vacuum once (`PRAGMA auto_vacuum` can only change with a `VACUUM`, which
    /// rewrites the file: instant on a new database, about as long as copying the file on an old one). When that
    /// fails (no room for the copy), retention still deletes and SQLite reuses the freed pages; the file only does
    /// not shrink.
    static func useIncrementalVacuum(_ database: DatabasePool, logger: Logger) {
        do {
            let mode = try database.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0 }
            guard mode != 2 else { return }
            let pages = try database.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
            if pages > 1_000 { logger.notice("Switching the SQLite file to incremental vacuum: it is rewritten once", metadata: ["pages": "\(pages)"]) }
            try database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
        } catch {
            logger.warning("Could not switch the SQLite file to incremental vacuum; freed pages are reused but the file does not shrink",
                metadata: ["error": "\(error)"])
        }
    }
}
