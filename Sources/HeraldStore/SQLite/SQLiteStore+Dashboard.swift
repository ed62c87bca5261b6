import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func deviceTallies() async throws -> [DeviceTally] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT platform, is_active, COUNT(*) AS count FROM device
                    GROUP BY platform, is_active ORDER BY platform, is_active DESC
                    """
            ).map { row in
                DeviceTally(
                    platform: try Self.enumValue(row["platform"]), isActive: row["is_active"], count: row["count"])
            }
        }
    }

    public func notificationSummary(since: Date, errorLimit: Int) async throws -> NotificationSummary {
        try await read { db in
            let start = since.timeIntervalSince1970
            var summary = NotificationSummary()
            for row in try Row.fetchAll(
                db, sql: "SELECT status, COUNT(*) AS count FROM notification WHERE updated_at >= ? GROUP BY status",
                arguments: [start])
            {
                summary.byStatus[try Self.enumValue(row["status"])] = row["count"]
            }
            summary.pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notification WHERE status = 'pending'") ?? 0
            summary.topErrors = try Row.fetchAll(
                db,
                sql: """
                    SELECT last_error, COUNT(*) AS count FROM notification
                    WHERE updated_at >= ? AND last_error IS NOT NULL
                    GROUP BY last_error ORDER BY count DESC, last_error LIMIT ?
                    """,
                arguments: [start, errorLimit]
            ).map { ErrorTally(error: $0["last_error"], count: $0["count"]) }
            return summary
        }
    }

    /// A device's latest notifications, from `notification_device_created`: an index that outcomes do not rewrite.
    static let deviceNotificationsStatement =
        "SELECT * FROM notification WHERE device_id = ? ORDER BY created_at DESC, id DESC LIMIT ?"

    public func recentNotifications(deviceID: Device.ID?, limit: Int) async throws -> [PushNotification] {
        try await read { db in
            let rows: [Row]
            if let deviceID {
                rows = try Row.fetchAll(db, sql: Self.deviceNotificationsStatement, arguments: [deviceID.databaseString, limit])
            } else {
                rows = try Row.fetchAll(
                    db, sql: "SELECT * FROM notification ORDER BY updated_at DESC, id DESC LIMIT ?", arguments: [limit])
            }
            return try rows.map(Self.notification)
        }
    }
}
