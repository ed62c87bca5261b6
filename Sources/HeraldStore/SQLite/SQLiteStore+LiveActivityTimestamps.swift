import Foundation
import GRDB
import HeraldCore

/// The last `aps.timestamp` given to each Home Assistant Live Activity token (``ActivityStore/nextLiveActivityTimestamp(token:now:)``),
/// and the activity's last pushed event: migration v21.
extension SQLiteStore {
    static let liveActivityTimestampSchema = """
        CREATE TABLE live_activity_timestamp (
            token TEXT PRIMARY KEY NOT NULL,
            last_timestamp INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX live_activity_timestamp_last ON live_activity_timestamp (last_timestamp);
        ALTER TABLE activity ADD COLUMN pushed_event TEXT;
        """

    /// Read, decided by ``LiveActivityTimestamp`` and written in one write transaction (SQLite's single writer); tokens
    /// whose last timestamp is more than ``liveActivityTimestampMemory`` seconds in the past are forgotten on the way.
    public func nextLiveActivityTimestamp(token: String, now: Date) async throws -> Int {
        let seconds = LiveActivityTimestamp.seconds(now)
        return try await write { db in
            let previous = try Int.fetchOne(db.cachedStatement(sql: "SELECT last_timestamp FROM live_activity_timestamp WHERE token = ?"),
                arguments: [token])
            let timestamp = LiveActivityTimestamp.next(after: previous, nowSeconds: seconds)
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO live_activity_timestamp (token, last_timestamp) VALUES (?, ?)")
                .execute(arguments: [token, timestamp])
            try db.cachedStatement(sql: "DELETE FROM live_activity_timestamp WHERE last_timestamp < ?")
                .execute(arguments: [seconds.subtractingReportingOverflow(liveActivityTimestampMemory).partialValue])
            return timestamp
        }
    }
}
