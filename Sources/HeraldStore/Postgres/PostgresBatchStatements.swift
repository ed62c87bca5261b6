import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// The statements of ``PostgresStore/commit(_:)`` for a batch with a dead token, in one transaction (every other batch
/// is one call of `herald_commit_batch`, which does the same in the database: ``PostgresCommitStatement``): each takes
/// the whole batch as arrays (``PostgresColumn``), so a batch of any size costs the same statements, and each is
/// prepared once per connection (PostgreSQL parses and plans it once, not once per batch).
enum PostgresBatchStatements {
    /// Creates the counters a batch writes and locks them, in one order on every instance (two batches that count for
    /// the same devices in different orders queue one behind the other instead of deadlocking); returns them as they
    /// stand, with whether each was created here.
    struct LockCounters: PostgresPreparedStatement {
        static let name = "herald_lock_counters"
        static let sql = """
            INSERT INTO quota_counter (device_id, day)
            SELECT device_id, day FROM unnest($1::uuid[], $2::text[]) AS counter (device_id, day)
            ORDER BY device_id, day
            ON CONFLICT (device_id, day) DO UPDATE SET attempts = quota_counter.attempts
            RETURNING device_id, day, attempts, successful, errors, total, exempt, limit_announced, xmax = 0
            """
        typealias Row = (key: BatchQuotaLedger.Key, row: BatchQuotaLedger.Row, created: Bool)

        var keys: [BatchQuotaLedger.Key]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(keys.map(\.deviceID))
            bindings.append(keys.map(\.day))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (deviceID, day, attempts, successful, errors, total, exempt, announced, created) = try row.decode(
                (UUID, String, Int, Int, Int, Int, Int, Bool, Bool).self)
            return (
                BatchQuotaLedger.Key(deviceID: deviceID, day: day),
                BatchQuotaLedger.Row(
                    attempts: attempts, successful: successful, errors: errors, total: total, exempt: exempt,
                    limitAnnounced: announced),
                created
            )
        }
    }

    /// Each device's pending notifications, counted up to its bound (the partial index `notification_device_pending`).
    /// Runs after ``LockCounters``: concurrent accepts for a device wait there, and then see each other's notifications.
    struct CountPending: PostgresPreparedStatement {
        static let name = "herald_count_pending"
        static let sql = """
            SELECT d.device_id, (SELECT count(*) FROM (SELECT 1 FROM notification
                WHERE notification.device_id = d.device_id AND status = 'pending' LIMIT d.bound) AS pending)
            FROM unnest($1::uuid[], $2::bigint[]) AS d (device_id, bound)
            """
        typealias Row = (Device.ID, Int)

        var bounds: [Device.ID: Int]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(Array(bounds.keys))
            bindings.append(Array(bounds.values))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((UUID, Int).self) }
    }

    /// Writes the counters back (their rows are locked: nobody changed them meanwhile) and inserts the accepted
    /// notifications, in one statement.
    struct WriteCountersAndInsert: PostgresPreparedStatement {
        static let name = "herald_write_batch"
        static let sql = """
            WITH counters AS (
                UPDATE quota_counter SET attempts = c.attempts, successful = c.successful, errors = c.errors,
                    total = c.total, exempt = c.exempt, limit_announced = c.limit_announced
                FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
                    $8::boolean[]) AS c (device_id, day, attempts, successful, errors, total, exempt, limit_announced)
                WHERE quota_counter.device_id = c.device_id AND quota_counter.day = c.day)
            INSERT INTO notification (\(PostgresStore.notificationColumns), lease_owner, lease_expires_at)
            SELECT * FROM unnest($9::uuid[], $10::uuid[], $11::text[], $12::bigint[], $13::text[], $14::bytea[],
                $15::text[], $16::text[], $17::bigint[], $18::text[], $19::text[], $20::float8[], $21::float8[],
                $22::float8[], $23::float8[], $24::text[], $25::bytea[], $26::text[], $27::text[], $28::float8[])
            """

        var counters: [(key: BatchQuotaLedger.Key, row: BatchQuotaLedger.Row)]
        var accepted: [AcceptRequest]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 28)
            bindings.append(counters.map(\.key.deviceID))
            bindings.append(counters.map(\.key.day))
            bindings.append(counters.map(\.row.attempts))
            bindings.append(counters.map(\.row.successful))
            bindings.append(counters.map(\.row.errors))
            bindings.append(counters.map(\.row.total))
            bindings.append(counters.map(\.row.exempt))
            bindings.append(counters.map(\.row.limitAnnounced))
            try bindings.appendNotificationColumns(accepted.map(\.notification), leases: accepted.map(\.lease))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// Saves the outcomes whose notifications `owner` still holds (each releases its lease); returns those saved.
    struct SaveOutcomes: PostgresPreparedStatement {
        static let name = "herald_save_outcomes"
        static let sql = """
            UPDATE notification SET status = o.status, attempts = o.attempts, last_error = o.last_error,
                provider_message_id = o.provider_message_id, updated_at = o.updated_at,
                next_attempt_at = o.next_attempt_at, expires_at = o.expires_at, parked = o.parked,
                lease_owner = NULL, lease_expires_at = NULL
            FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::float8[], $7::float8[],
                $8::float8[], $9::boolean[]) AS o (id, status, attempts, last_error, provider_message_id, updated_at,
                next_attempt_at, expires_at, parked)
            WHERE notification.id = o.id AND notification.lease_owner = $10 AND notification.status = 'pending'
            RETURNING notification.id, notification.quota_day
            """
        typealias Row = (PushNotification.ID, String?)

        /// At most one outcome per notification.
        var outcomes: [DeliveryOutcome]
        var owner: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 10)
            let notifications = outcomes.map(\.notification)
            bindings.append(notifications.map(\.id))
            bindings.append(notifications.map(\.status.rawValue))
            bindings.append(notifications.map(\.attempts))
            try bindings.append(PostgresColumn(notifications.map(\.lastError)))
            try bindings.append(PostgresColumn(notifications.map(\.providerMessageID)))
            bindings.append(notifications.map(\.updatedAt.timeIntervalSince1970))
            bindings.append(notifications.map(\.nextAttemptAt.timeIntervalSince1970))
            bindings.append(notifications.map(\.expiresAt.timeIntervalSince1970))
            bindings.append(outcomes.map(\.isParked))
            bindings.append(owner)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((UUID, String?).self) }
    }
}

extension PostgresBindings {
    /// The columns of `notification` for a set-based insert of `notifications` with their `leases` (one each), in the
    /// order the batch statements' `unnest` reads them (``PostgresBatchStatements`` and the commit function).
    mutating func appendNotificationColumns(_ notifications: [PushNotification], leases: [Lease?]) throws {
        append(notifications.map(\.id))
        append(notifications.map(\.deviceID))
        append(notifications.map(\.pushType.rawValue))
        append(notifications.map(\.priority.apnsValue))
        try append(PostgresColumn(notifications.map(\.collapseID)))
        try append(PostgresBytesColumn(values: notifications.map(\.payload)))
        try append(PostgresColumn(notifications.map(\.quotaDay)))
        append(notifications.map(\.status.rawValue))
        append(notifications.map(\.attempts))
        try append(PostgresColumn(notifications.map(\.lastError)))
        try append(PostgresColumn(notifications.map(\.providerMessageID)))
        append(notifications.map(\.createdAt.timeIntervalSince1970))
        append(notifications.map(\.updatedAt.timeIntervalSince1970))
        append(notifications.map(\.nextAttemptAt.timeIntervalSince1970))
        append(notifications.map(\.expiresAt.timeIntervalSince1970))
        try append(PostgresColumn(notifications.map(\.liveActivityToken)))
        try append(PostgresBytesColumn(values: try notifications.map { try $0.content?.encoded() }))
        try append(PostgresColumn(notifications.map(\.renderedBy)))
        try append(PostgresColumn(leases.map(\.?.owner)))
        try append(PostgresColumn(leases.map(\.?.expiresAt.timeIntervalSince1970)))
    }
}
