import GRDB
import HeraldCore

extension SQLiteStore {
    /// The limits an accept meets before its quota: the device's pending backlog (a full one refuses the
    /// notification), and for an exempt notification the day's cap on exempt ones (counted here when there is room).
    /// `nil` when the notification may be stored.
    static func refusal(by quota: QuotaRequest, counters: QuotaCounters, deviceID: String, _ db: GRDB.Database) throws -> AcceptDecision? {
        if let pendingMaximum = quota.pendingMaximum {
            // Counts at most `pendingMaximum` rows of the device's pending index, however deep the backlog. Named,
            // because SQLite's planner takes (device_id, created_at) over every notification of the device and reads
            // each row for its status: a device's whole history per accept (20-30 % more CPU per notification in
            // benchmark scenario 1, where each device has thousands delivered).
            let pending = try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COUNT(*) FROM (
                            SELECT 1 FROM notification INDEXED BY notification_device_pending
                            WHERE device_id = ? AND status = 'pending' LIMIT ?)
                        """),
                arguments: [deviceID, pendingMaximum]) ?? 0
            if pending >= pendingMaximum { return .backlogFull(counters) }
        }
        if quota.maximum == nil, let exemptMaximum = quota.exemptMaximum {
            let counted = try Int.fetchOne(
                db.cachedStatement(
                    sql: "UPDATE quota_counter SET exempt = exempt + 1 WHERE device_id = ? AND day = ? AND exempt < ? RETURNING exempt"),
                arguments: [deviceID, quota.day, exemptMaximum])
            if counted == nil { return .exemptQuotaExceeded(counters) }
        }
        return nil
    }
}
