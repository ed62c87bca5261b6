import Foundation
import GRDB
import HeraldCore

/// PushWard activities: SQLite runs one write transaction at a time, so a change (read, decide, write) of one
/// device's activities can never interleave with another's or with a claim.
extension SQLiteStore {
    public func activities(deviceID: Device.ID) async throws -> [ActivityRecord] {
        try await database.read { db in try Self.activities(deviceID: deviceID, db) }
    }

    public func activity(deviceID: Device.ID, slug: String) async throws -> ActivityRecord? {
        try await database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM activity WHERE device_id = ? AND slug = ?", arguments: [deviceID.databaseString, slug]
            ).map(Self.activity)
        }
    }

    public func changeActivities<Result: Sendable>(
        deviceID: Device.ID, _ change: @escaping @Sendable ([ActivityRecord]) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [deviceID.databaseString]) != nil else {
                throw StoreError.notFound("device")
            }
            let (writes, result) = try change(try Self.activities(deviceID: deviceID, db))
            for slug in writes.deletions {
                try db.execute(
                    sql: "DELETE FROM activity WHERE device_id = ? AND slug = ?", arguments: [deviceID.databaseString, slug])
            }
            for record in writes.upserts where record.deviceID == deviceID {
                try db.execute(sql: Self.upsertSQL, arguments: Self.arguments(record))
            }
            return result
        }
    }

    public func claimDueActivities(at now: Date, lease: Lease, limit: Int) async throws -> [ActivityRecord] {
        try await write { db in
            let time = now.timeIntervalSince1970
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM activity
                    WHERE (push_due_at <= ? OR next_due_at <= ?) AND (lease_owner IS NULL OR lease_expires_at <= ?)
                    ORDER BY min(coalesce(push_due_at, next_due_at), coalesce(next_due_at, push_due_at)), slug LIMIT ?
                    """, arguments: [time, time, time, limit])
            return try rows.map { row in
                var record = try Self.activity(row)
                record.lease = lease
                try db.execute(
                    sql: "UPDATE activity SET lease_owner = ?, lease_expires_at = ? WHERE device_id = ? AND slug = ?",
                    arguments: [lease.owner, lease.expiresAt.timeIntervalSince1970, record.deviceID.databaseString, record.slug])
                return record
            }
        }
    }

    public func nextActivityDue() async throws -> Date? {
        try await database.read { db in
            let next = try Double.fetchOne(
                db,
                sql: """
                    SELECT min(due) FROM (
                        SELECT min(push_due_at) AS due FROM activity UNION ALL SELECT min(next_due_at) AS due FROM activity)
                    """)
            return next.map(Date.init(timeIntervalSince1970:))
        }
    }

    // MARK: Rows

    private static func activities(deviceID: Device.ID, _ db: GRDB.Database) throws -> [ActivityRecord] {
        try Row.fetchAll(db, sql: "SELECT * FROM activity WHERE device_id = ? ORDER BY slug", arguments: [deviceID.databaseString])
            .map(activity)
    }

    private static let upsertSQL = """
        INSERT OR REPLACE INTO activity (
            device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version, pushed_version,
            pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token, lease_owner,
            lease_expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    private static func arguments(_ record: ActivityRecord) -> StatementArguments {
        [
            record.deviceID.databaseString, record.slug, record.state, record.priority, record.createdAt.timeIntervalSince1970,
            record.updatedAt.timeIntervalSince1970, record.document, record.nextDueAt?.timeIntervalSince1970, record.version,
            record.pushedVersion, record.pendingPush, record.pushDueAt?.timeIntervalSince1970, record.pushedState,
            record.pushedTimestamp, record.inFlightNotification?.databaseString, record.updateToken, record.lease?.owner,
            record.lease?.expiresAt.timeIntervalSince1970,
        ]
    }

    private static func activity(_ row: Row) throws -> ActivityRecord {
        func date(_ column: String) -> Date? { (row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        guard let deviceID = UUID(uuidString: row["device_id"]) else { throw CorruptActivityRow(detail: "bad device id") }
        let inFlight: String? = row["in_flight_notification"]
        let leaseOwner: String? = row["lease_owner"]
        return ActivityRecord(
            deviceID: deviceID, slug: row["slug"], state: row["state"], priority: row["priority"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]), updatedAt: Date(timeIntervalSince1970: row["updated_at"]),
            document: row["document"], nextDueAt: date("next_due_at"), version: row["version"], pushedVersion: row["pushed_version"],
            pendingPush: row["pending_push"], pushDueAt: date("push_due_at"), pushedState: row["pushed_state"],
            pushedTimestamp: row["pushed_timestamp"], inFlightNotification: inFlight.flatMap(UUID.init(uuidString:)),
            updateToken: row["update_token"],
            lease: leaseOwner.map { Lease(owner: $0, expiresAt: date("lease_expires_at") ?? .distantPast) })
    }
}

private struct CorruptActivityRow: Error {
    var detail: String
}
