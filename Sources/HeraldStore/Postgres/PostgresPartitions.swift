import Foundation
import HeraldCore
import PostgresNIO
import Synchronization

/// Notifications by day (issue 40, section 4; migration 20): `notification` and what hangs off a notification
/// (`notification_answer`, `notification_event`) are partitioned by the UTC day the notification was accepted on
/// (`created_at`; the dependents carry it as `notification_created_at`), one partition of each per day
/// (`notification_d20421`: days since 1970-01-01). Retention drops a day's three partitions at once (no deleted rows,
/// no vacuum debt) once every notification of the day is finished and unchanged since the cutoff.
///
/// Why the day of acceptance: it never changes, so a row never moves between partitions (an `UPDATE` that moved rows
/// would fail concurrent updates of the same row with a serialization error), and the statements of the hot path stay
/// as they were. A day that still holds a pending notification (a retry, a parked one: at most
/// `HERALD_NOTIFICATION_TTL` after its acceptance) is not dropped: its finished rows are deleted one batch at a
/// time as before, and the partition goes once the last pending one finished and passed the retention. So a pending
/// notification is never dropped, and the storage holds about retention + TTL + one day of notifications.
///
/// Partitions are made on demand: before a batch inserts notifications of a day this store has not seen yet, one
/// call makes the day's partitions if they are missing (``ensurePartitions(days:)``; `ATTACH PARTITION`, which does not
/// stop reads and writes of the other days). A notification is never refused for want of a partition: should another
/// instance have dropped its day meanwhile (only possible for a day past the retention), the batch makes it again and
/// is written once more.
extension PostgresStore {
    /// The key of the transaction-scoped advisory lock that serialises making partitions ("herb"), with the schema's
    /// name as the second key.
    static let partitionLockClass: Int32 = 0x6865_7262

    /// The tables partitioned by day, the notifications last (dropped after their dependents).
    static let partitionedTables = ["notification_answer", "notification_event", "notification"]

    /// The statements of migration 20: the three tables made again partitioned, their rows copied into one partition
    /// per day they hold, the old tables dropped. `inbox_seq` keeps its sequence (the inbox's cursors stay valid).
    static let partitionMigration: [String] = [
        "ALTER TABLE notification RENAME TO notification_v19",
        "ALTER TABLE notification_v19 RENAME CONSTRAINT notification_pkey TO notification_v19_pkey",
        "ALTER TABLE notification_answer RENAME TO notification_answer_v19",
        "ALTER TABLE notification_answer_v19 RENAME CONSTRAINT notification_answer_pkey TO notification_answer_v19_pkey",
        "ALTER TABLE notification_event RENAME TO notification_event_v19",
        "ALTER TABLE notification_event_v19 RENAME CONSTRAINT notification_event_pkey TO notification_event_v19_pkey",
        "ALTER SEQUENCE notification_inbox_seq_seq OWNED BY NONE",
        // The same columns in the same order (defaults included: `inbox_seq` takes the same sequence). The key includes
        // the partition's column; ids are random UUIDs made by Herald, unique without a constraint across days.
        """
        CREATE TABLE notification (
            LIKE notification_v19 INCLUDING DEFAULTS,
            PRIMARY KEY (id, created_at),
            FOREIGN KEY (device_id) REFERENCES device (id) ON DELETE CASCADE
        ) PARTITION BY RANGE (created_at)
        """,
        """
        CREATE TABLE notification_answer (
            notification_id uuid NOT NULL,
            notification_created_at double precision NOT NULL,
            action_id text NOT NULL,
            answer_text text,
            answered_at double precision NOT NULL,
            PRIMARY KEY (notification_id, notification_created_at)
        ) PARTITION BY RANGE (notification_created_at)
        """,
        """
        CREATE TABLE notification_event (
            notification_id uuid NOT NULL,
            notification_created_at double precision NOT NULL,
            event text NOT NULL,
            reported_at double precision NOT NULL,
            PRIMARY KEY (notification_id, event, notification_created_at)
        ) PARTITION BY RANGE (notification_created_at)
        """,
        // Makes the missing partitions of `days` (days since 1970), under a lock: instances making one at once wait.
        // A partition is made apart and attached: `CREATE TABLE … PARTITION OF` would lock the whole table.
        """
        CREATE FUNCTION herald_notification_partitions(days integer[]) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            day integer;
            parent text;
            child text;
        BEGIN
            PERFORM pg_advisory_xact_lock(\(partitionLockClass), hashtext(current_schema()));
            FOREACH day IN ARRAY days LOOP
                FOREACH parent IN ARRAY ARRAY['notification', 'notification_answer', 'notification_event'] LOOP
                    child := parent || '_d' || day;
                    IF to_regclass(quote_ident(child)) IS NULL THEN
                        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', child, parent);
                        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                            parent, child, day::float8 * 86400, (day + 1)::float8 * 86400);
                    END IF;
                END LOOP;
            END LOOP;
        END
        $$
        """,
        "SELECT herald_notification_partitions(ARRAY(SELECT DISTINCT floor(created_at / 86400)::integer FROM notification_v19))",
        "INSERT INTO notification SELECT * FROM notification_v19",
        """
        INSERT INTO notification_answer (notification_id, notification_created_at, action_id, answer_text, answered_at)
        SELECT a.notification_id, n.created_at, a.action_id, a.answer_text, a.answered_at
        FROM notification_answer_v19 a JOIN notification_v19 n ON n.id = a.notification_id
        """,
        """
        INSERT INTO notification_event (notification_id, notification_created_at, event, reported_at)
        SELECT e.notification_id, n.created_at, e.event, e.reported_at
        FROM notification_event_v19 e JOIN notification_v19 n ON n.id = e.notification_id
        """,
        "DROP TABLE notification_answer_v19, notification_event_v19",
        "DROP TABLE notification_v19",
        "ALTER SEQUENCE notification_inbox_seq_seq OWNED BY notification.inbox_seq",
        "CREATE INDEX notification_due ON notification (next_attempt_at) WHERE status = 'pending'",
        "CREATE INDEX notification_device_pending ON notification (device_id, created_at) WHERE status = 'pending'",
        "CREATE INDEX notification_lease ON notification (lease_owner) WHERE lease_owner IS NOT NULL",
        "CREATE INDEX notification_parked ON notification (device_id) WHERE parked",
        "CREATE INDEX notification_updated ON notification (updated_at)",
        "CREATE INDEX notification_device_created ON notification (device_id, created_at)",
        // What ON DELETE CASCADE did (a foreign key cannot name a partitioned table's `id` alone): a notification
        // deleted as a row (its device removed, retention's batches) takes its answer and events along. A dropped
        // partition fires nothing: its dependents' partitions of the same day are dropped with it.
        """
        CREATE FUNCTION notification_dependents_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM notification_answer WHERE notification_id = OLD.id AND notification_created_at = OLD.created_at;
            DELETE FROM notification_event WHERE notification_id = OLD.id AND notification_created_at = OLD.created_at;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER notification_dependents_follow AFTER DELETE ON notification
        FOR EACH ROW EXECUTE FUNCTION notification_dependents_follow()
        """,
    ]

    /// The day (since 1970, UTC) a time in seconds falls on, as the partitions count them; `nil` for a time no
    /// partition can hold (not finite, or beyond ±10 million days).
    static func partitionDay(of seconds: Double) -> Int? {
        let day = (seconds / 86_400).rounded(.down)
        guard day.isFinite, abs(day) < 10_000_000 else { return nil }
        return Int(day)
    }

    /// Makes the partitions of the days of `notifications` that this store has not made or seen yet (one statement, and
    /// none at all for the days it knows: every batch of a day after its first).
    func ensurePartitions(for notifications: [PushNotification], force: Bool = false) async throws {
        let days = Set(notifications.compactMap { Self.partitionDay(of: $0.createdAt.timeIntervalSince1970) })
        let missing = force ? days : partitionDays.withLock { known in days.subtracting(known) }
        guard !missing.isEmpty else { return }
        let sorted = missing.sorted()
        // In a transaction of its own: one that PostgreSQL aborts for a deadlock (attaching waits for locks) runs again.
        try await transaction { connection in
            _ = try await self.execute("SELECT herald_notification_partitions(\(sorted)::integer[])", on: connection)
        }
        partitionDays.withLock { $0.formUnion(missing) }
    }

    /// The days that have partitions of `parent` (`notification`, or `notification_receipt`: partitions named
    /// `<parent>_d<day>`), oldest first.
    func partitionedDays(of parent: String = "notification") async throws -> [Int] {
        let prefix = parent + "_d"
        return try await read(
            """
            SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = \(parent)::regclass
            """
        ).compactMap { row in
            let name = try row.decode(String.self)
            return name.hasPrefix(prefix) ? Int(name.dropFirst(prefix.count)) : nil
        }.sorted()
    }

    /// Drops the partitions of the days that ended before `cutoff` and hold only notifications finished and unchanged
    /// since before it; returns how many notifications went. Stops at the first day whose table could not be locked
    /// within a second (busy: the next pass tries again); `nil` then, so that the caller does not delete the day's
    /// rows one by one meanwhile.
    func dropFinishedPartitions(before cutoff: Double) async throws -> Int? {
        var dropped = 0
        for day in try await partitionedDays() where Double(day + 1) * 86_400 <= cutoff {
            switch try await dropPartitions(day: day, before: cutoff) {
            case .kept: continue
            case .dropped(let count):
                partitionDays.withLock { _ = $0.remove(day) }
                dropped += count
            case .busy:
                logger.info("A day's notifications were not dropped: their table was busy; the next pass tries again", metadata: ["day": "\(day)"])
                return dropped == 0 ? nil : dropped
            }
        }
        return dropped
    }

    private enum PartitionDrop { case dropped(Int), kept, busy }

    /// Drops the partitions of `day` if every notification of it is finished and unchanged since before `cutoff`.
    private func dropPartitions(day: Int, before cutoff: Double) async throws -> PartitionDrop {
        let partition = "\"notification_d\(day)\""
        // Checked before the lock (through the partial index of pending notifications and that of last changes: no
        // scan) and again under it, when nothing can change the partition any more.
        let keeps: PostgresQuery = """
            SELECT EXISTS (SELECT 1 FROM \(unescaped: partition) WHERE status = 'pending')
                OR EXISTS (SELECT 1 FROM \(unescaped: partition) WHERE updated_at >= \(cutoff))
            """
        do {
            guard try await read(keeps).first?.decode(Bool.self) == false else { return .kept }
            let count = try await read("SELECT count(*) FROM \(unescaped: partition)").first?.decode(Int.self) ?? 0
            return try await transaction { connection -> PartitionDrop in
                try await self.execute("SET LOCAL lock_timeout = '1s'", on: connection)
                do {
                    // The parents first, as every statement on them locks them: no deadlock with the hot path.
                    try await self.execute(
                        "LOCK TABLE notification, notification_answer, notification_event IN ACCESS EXCLUSIVE MODE", on: connection)
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
                    return .busy  // the transaction is aborted: its COMMIT rolls back
                }
                guard try await self.execute(keeps, on: connection).first?.decode(Bool.self) == false else { return .kept }
                let tables = Self.partitionedTables.map { "\"\($0)_d\(day)\"" }.joined(separator: ", ")
                try await self.execute("DROP TABLE \(unescaped: tables)", on: connection)
                return .dropped(count)
            }
        } catch let error as PostgresStoreError where error.sqlState == "42P01" {
            return .kept  // another instance dropped the day meanwhile
        }
    }
}
