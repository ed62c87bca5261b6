extension PostgresMigrations {
    /// Version 22: receipts (`notification_receipt`, migration 15) partitioned by the UTC day they were created on, as
    /// notifications are since version 20 (``PostgresStore/receiptPartitionTable``): the table made again partitioned
    /// with the same columns and indexes, the key `(id, created_at)`, its rows copied into one partition per day they
    /// hold (`notification_receipt_d20421`), the old table dropped. `herald_receipt_partitions` makes a day's
    /// partition on demand, under the advisory lock that `herald_notification_partitions` takes.
    static let receiptPartitions = Migration(
        version: 22, description: "receipts partitioned by day (issue 40, section 4)",
        statements: [
            "ALTER TABLE notification_receipt RENAME TO notification_receipt_v21",
            "ALTER TABLE notification_receipt_v21 RENAME CONSTRAINT notification_receipt_pkey TO notification_receipt_v21_pkey",
            // The same columns in the same order; ids are random UUIDs made by Herald, unique without a constraint across
            // days. The device's removal still takes its receipts (a foreign key from a partitioned table is allowed).
            """
            CREATE TABLE notification_receipt (
                LIKE notification_receipt_v21 INCLUDING DEFAULTS,
                PRIMARY KEY (id, created_at),
                FOREIGN KEY (device_id) REFERENCES device (id) ON DELETE CASCADE
            ) PARTITION BY RANGE (created_at)
            """,
            // Makes the missing partitions of `days` (days since 1970), under the partitions' lock: instances making one
            // at once wait. Made apart and attached: `CREATE TABLE … PARTITION OF` would lock the whole table.
            """
            CREATE FUNCTION herald_receipt_partitions(days integer[]) RETURNS void LANGUAGE plpgsql AS $$
            DECLARE
                day integer;
                child text;
            BEGIN
                PERFORM pg_advisory_xact_lock(\(PostgresStore.partitionLockClass), hashtext(current_schema()));
                FOREACH day IN ARRAY days LOOP
                    child := 'notification_receipt_d' || day;
                    IF to_regclass(quote_ident(child)) IS NULL THEN
                        EXECUTE format('CREATE TABLE %I (LIKE notification_receipt INCLUDING DEFAULTS)', child);
                        EXECUTE format('ALTER TABLE notification_receipt ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                            child, day::float8 * 86400, (day + 1)::float8 * 86400);
                    END IF;
                END LOOP;
            END
            $$
            """,
            """
            SELECT herald_receipt_partitions(ARRAY(SELECT DISTINCT floor(created_at / 86400)::integer FROM notification_receipt_v21))
            """,
            "INSERT INTO notification_receipt SELECT * FROM notification_receipt_v21",
            "DROP TABLE notification_receipt_v21",
            "CREATE INDEX notification_receipt_due ON notification_receipt (next_repeat_at) WHERE status = 'active'",
            "CREATE INDEX notification_receipt_device_active ON notification_receipt (device_id) WHERE status = 'active'",
            "CREATE INDEX notification_receipt_token_active ON notification_receipt (token_id, collapse_id) WHERE status = 'active'",
            "CREATE INDEX notification_receipt_ended ON notification_receipt (ended_at) WHERE status != 'active'",
        ])
}
