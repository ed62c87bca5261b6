import Foundation
import HeraldCore
import PostgresNIO

/// The last `aps.timestamp` given to each Home Assistant Live Activity token (``ActivityStore/nextLiveActivityTimestamp(token:now:)``),
/// and the activity's last pushed event: migration 18.
extension PostgresStore {
    /// One statement, atomic across instances: the upsert takes the row's lock, so two concurrent calls for one token
    /// get two timestamps. `greatest(now, last + 1)` is ``LiveActivityTimestamp/next(after:nowSeconds:)`` in SQL.
    public func nextLiveActivityTimestamp(token: String, now: Date) async throws -> Int {
        let seconds = LiveActivityTimestamp.seconds(now)
        let forgetBefore = seconds.subtractingReportingOverflow(liveActivityTimestampMemory).partialValue
        let rows = try await write(
            """
            WITH forgotten AS (DELETE FROM live_activity_timestamp WHERE last_timestamp < \(forgetBefore) AND token <> \(token))
            INSERT INTO live_activity_timestamp AS t (token, last_timestamp) VALUES (\(token), \(seconds))
            ON CONFLICT (token) DO UPDATE SET last_timestamp = greatest(EXCLUDED.last_timestamp, t.last_timestamp + 1)
            RETURNING last_timestamp
            """)
        guard let timestamp = try rows.first?.decode(Int.self) else { throw StoreError.notFound("live activity timestamp") }
        return timestamp
    }
}

extension PostgresMigrations {
    /// Version 18 (issue 38): Home Assistant's Live Activity timestamps kept in the store, and the event of an
    /// activity's last push.
    static let liveActivityTimestamps = Migration(
        version: 18, description: "Live Activity timestamps per token; the event of an activity's last push (issue 38)",
        statements: [
            """
            CREATE TABLE live_activity_timestamp (
                token text PRIMARY KEY,
                last_timestamp bigint NOT NULL
            )
            """,
            "CREATE INDEX live_activity_timestamp_last ON live_activity_timestamp (last_timestamp)",
            "ALTER TABLE activity ADD COLUMN pushed_event text",
        ])
}
