import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    public func deviceTallies() async throws -> [DeviceTally] {
        try await read(
            """
            SELECT platform, is_active, count(*) FROM device
            GROUP BY platform, is_active ORDER BY platform, is_active DESC
            """
        ).map { row in
            let (platform, isActive, count) = try row.decode((String, Bool, Int).self)
            guard let known = Platform(rawValue: platform) else {
                throw CorruptPostgresRow(detail: "unknown value \(platform) in platform")
            }
            return DeviceTally(platform: known, isActive: isActive, count: count)
        }
    }

    public func notificationSummary(since: Date, errorLimit: Int) async throws -> NotificationSummary {
        let start = since.timeIntervalSince1970
        var summary = NotificationSummary()
        for row in try await read("SELECT status, count(*) FROM notification WHERE updated_at >= \(start) GROUP BY status") {
            let (status, count) = try row.decode((String, Int).self)
            guard let known = DeliveryStatus(rawValue: status) else {
                throw CorruptPostgresRow(detail: "unknown value \(status) in status")
            }
            summary.byStatus[known] = count
        }
        summary.pending =
            try await read("SELECT count(*) FROM notification WHERE status = 'pending'").first?.decode(Int.self) ?? 0
        summary.topErrors = try await read(
            """
            SELECT last_error, count(*) AS count FROM notification
            WHERE updated_at >= \(start) AND last_error IS NOT NULL
            GROUP BY last_error ORDER BY count DESC, last_error COLLATE "C" LIMIT \(errorLimit)
            """
        ).map { row in
            let (error, count) = try row.decode((String, Int).self)
            return ErrorTally(error: error, count: count)
        }
        return summary
    }

    public func recentNotifications(deviceID: Device.ID?, limit: Int) async throws -> [PushNotification] {
        if let deviceID {
            return try await read(
                """
                SELECT \(unescaped: Self.notificationColumns) FROM notification WHERE device_id = \(deviceID)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """
            ).map(Self.notification)
        }
        return try await read(
            """
            SELECT \(unescaped: Self.notificationColumns) FROM notification
            ORDER BY updated_at DESC, id DESC LIMIT \(limit)
            """
        ).map(Self.notification)
    }
}
