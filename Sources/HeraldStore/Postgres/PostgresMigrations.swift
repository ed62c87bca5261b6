import Logging
import PostgresNIO

/// The versioned schema of the PostgreSQL store, recorded in `schema_version` (one row per migration applied).
///
/// Migrations run at startup in one transaction under a transaction-scoped advisory lock keyed by Herald's mark
/// (``lockClass``) and the schema's name: instances that start together on one schema wait for each other, and the
/// second finds the schema already migrated; schemas of their own (several deployments in one database, or every test)
/// do not queue behind each other (with a fixed key, a run's hundred test schemas migrated one at a time, past the
/// stores' 30 s start-up deadline). A migration, once released, is never edited: add a new one.
///
/// The schema is the SQLite store's at its latest version (devices, notifications with leases, quota counters, API
/// tokens, the device count), with PostgreSQL's types: `uuid` ids, `bytea` payloads, `boolean` flags and times as
/// `double precision` seconds since 1970, as SQLite stores them (a `Date` comes back exactly as it went in).
enum PostgresMigrations {
    struct Migration {
        var version: Int
        var description: String
        /// Run in order; one statement each (the extended query protocol takes one at a time).
        var statements: [String]
    }

    /// The first key of the two-key `pg_advisory_xact_lock` that serialises a schema's migrations ("hera" in ASCII);
    /// the second is the hash of the schema's name.
    static let lockClass: Int32 = 0x6865_7261

    static let all: [Migration] = [
        Migration(
            version: 1, description: "devices, device count, notifications with leases, quota counters, API tokens",
            statements: [
                """
                CREATE TABLE device (
                    id uuid PRIMARY KEY,
                    user_id_hash text NOT NULL UNIQUE,
                    secret_hash text NOT NULL,
                    platform text NOT NULL,
                    environment text NOT NULL,
                    token text,
                    is_active boolean NOT NULL,
                    inactive_reason text,
                    daily_limit bigint,
                    created_at double precision NOT NULL,
                    updated_at double precision NOT NULL
                )
                """,
                // Not unique: a token may be bound to several devices; a dead one deactivates them all.
                "CREATE INDEX device_platform_token ON device (platform, token) WHERE token IS NOT NULL",
                // The device count, kept by a trigger: one row read for the HERALD_MAX_DEVICES check.
                "CREATE TABLE device_count (id integer PRIMARY KEY CHECK (id = 1), count bigint NOT NULL)",
                "INSERT INTO device_count (id, count) VALUES (1, 0)",
                """
                CREATE FUNCTION device_count_follow() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        UPDATE device_count SET count = count + 1 WHERE id = 1;
                    ELSE
                        UPDATE device_count SET count = count - 1 WHERE id = 1;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER device_count_follow AFTER INSERT OR DELETE ON device
                FOR EACH ROW EXECUTE FUNCTION device_count_follow()
                """,
                """
                CREATE TABLE notification (
                    id uuid PRIMARY KEY,
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    push_type text NOT NULL,
                    priority bigint NOT NULL,
                    collapse_id text,
                    payload bytea NOT NULL,
                    quota_day text,
                    status text NOT NULL,
                    attempts bigint NOT NULL,
                    last_error text,
                    provider_message_id text,
                    created_at double precision NOT NULL,
                    updated_at double precision NOT NULL,
                    next_attempt_at double precision NOT NULL,
                    expires_at double precision NOT NULL,
                    lease_owner text,
                    lease_expires_at double precision,
                    parked boolean NOT NULL DEFAULT false
                )
                """,
                "CREATE INDEX notification_due ON notification (next_attempt_at) WHERE status = 'pending'",
                "CREATE INDEX notification_device_pending ON notification (device_id, created_at) WHERE status = 'pending'",
                "CREATE INDEX notification_lease ON notification (lease_owner) WHERE lease_owner IS NOT NULL",
                "CREATE INDEX notification_parked ON notification (device_id) WHERE parked",
                """
                CREATE TABLE quota_counter (
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    day text NOT NULL,
                    attempts bigint NOT NULL DEFAULT 0,
                    successful bigint NOT NULL DEFAULT 0,
                    errors bigint NOT NULL DEFAULT 0,
                    total bigint NOT NULL DEFAULT 0,
                    limit_announced boolean NOT NULL DEFAULT false,
                    PRIMARY KEY (device_id, day)
                )
                """,
                """
                CREATE TABLE api_token (
                    id uuid PRIMARY KEY,
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    name text NOT NULL,
                    token_hash text NOT NULL UNIQUE,
                    created_at double precision NOT NULL,
                    last_used_at double precision,
                    revoked_at double precision
                )
                """,
                "CREATE UNIQUE INDEX api_token_active_name ON api_token (device_id, name) WHERE revoked_at IS NULL",
                "CREATE INDEX api_token_device ON api_token (device_id, created_at)",
                // For the readiness probe's rolled-back write.
                "CREATE TABLE readiness_probe (filler bytea)",
            ]),
        Migration(
            version: 2, description: "which instance has a WebSocket client of which device (several instances)",
            statements: [
                """
                CREATE TABLE websocket_presence (
                    device_id uuid NOT NULL,
                    instance_id text NOT NULL,
                    heard_at double precision NOT NULL,
                    PRIMARY KEY (device_id, instance_id)
                )
                """,
                "CREATE INDEX websocket_presence_instance ON websocket_presence (instance_id)",
            ]),
        Migration(
            version: 3, description: "indexes for the operator dashboard (recent changes, a device's notifications)",
            statements: [
                "CREATE INDEX notification_updated ON notification (updated_at)",
                "CREATE INDEX notification_device_updated ON notification (device_id, updated_at)",
            ]),
        Migration(
            version: 4, description: "a device's notifications by acceptance, an index that outcomes do not change",
            statements: [
                "DROP INDEX notification_device_updated",
                "CREATE INDEX notification_device_created ON notification (device_id, created_at)",
            ]),
        Migration(
            version: 5, description: "the Live Activity token a notification goes to instead of its device's token",
            statements: ["ALTER TABLE notification ADD COLUMN live_activity_token text"]),
        Migration(
            version: 6, description: "a daily count of notifications exempt from the quota",
            statements: ["ALTER TABLE quota_counter ADD COLUMN exempt bigint NOT NULL DEFAULT 0"]),
        Migration(
            version: 7, description: "a notification's provider-neutral content and the renderer of its payload",
            statements: [
                "ALTER TABLE notification ADD COLUMN content bytea", "ALTER TABLE notification ADD COLUMN rendered_by text",
            ]),
        Migration(
            version: 8, description: "a Web Push device's subscription keys",
            statements: [
                "ALTER TABLE device ADD COLUMN webpush_p256dh text", "ALTER TABLE device ADD COLUMN webpush_auth text",
                "CREATE TABLE server_setting (name text PRIMARY KEY, value text NOT NULL)",
            ]),
        Migration(
            version: 9, description: "API token scopes and slugs; a device's push-to-start token",
            statements: [
                "ALTER TABLE api_token ADD COLUMN scopes text", "ALTER TABLE api_token ADD COLUMN slugs text",
                "ALTER TABLE device ADD COLUMN push_to_start_token text",
            ]),
        Migration(
            version: 10, description: "PushWard activities",
            statements: [
                """
                CREATE TABLE activity (
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    slug text NOT NULL,
                    state text NOT NULL,
                    priority bigint NOT NULL,
                    created_at double precision NOT NULL,
                    updated_at double precision NOT NULL,
                    document bytea NOT NULL,
                    next_due_at double precision,
                    version bigint NOT NULL,
                    pushed_version bigint NOT NULL,
                    pending_push bytea,
                    push_due_at double precision,
                    pushed_state text,
                    pushed_timestamp bigint,
                    in_flight_notification uuid,
                    update_token text,
                    lease_owner text,
                    lease_expires_at double precision,
                    PRIMARY KEY (device_id, slug)
                )
                """,
                "CREATE INDEX activity_push_due ON activity (push_due_at) WHERE push_due_at IS NOT NULL",
                "CREATE INDEX activity_next_due ON activity (next_due_at) WHERE next_due_at IS NOT NULL",
            ]),
        Migration(
            version: 11, description: "an activity's extras (timeline history, log backlog) apart from its document",
            statements: ["ALTER TABLE activity ADD COLUMN extras bytea"]),
        Migration(
            version: 12, description: "answers to notifications and the events the app reports (issue 39)",
            statements: [
                """
                CREATE TABLE notification_answer (
                    notification_id uuid PRIMARY KEY REFERENCES notification (id) ON DELETE CASCADE,
                    action_id text NOT NULL,
                    answer_text text,
                    answered_at double precision NOT NULL
                )
                """,
                """
                CREATE TABLE notification_event (
                    notification_id uuid NOT NULL REFERENCES notification (id) ON DELETE CASCADE,
                    event text NOT NULL,
                    reported_at double precision NOT NULL,
                    PRIMARY KEY (notification_id, event)
                )
                """,
                // The inbox's order: the order notifications were accepted in (a page's cursor is one of these).
                "ALTER TABLE notification ADD COLUMN inbox_seq bigserial",
            ]),
        Migration(
            version: 13, description: "when a device was last heard from (idle devices)",
            statements: ["ALTER TABLE device ADD COLUMN last_seen_at double precision"]),
        Migration(
            version: 14, description: "scheduled sends",
            statements: [
                """
                CREATE TABLE scheduled_send (
                    id uuid PRIMARY KEY,
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    token_id uuid NOT NULL,
                    notification bytea NOT NULL,
                    send_at double precision,
                    cron text,
                    time_zone text,
                    until_at double precision,
                    max_count bigint,
                    next_at double precision,
                    status text NOT NULL,
                    sent_count bigint NOT NULL,
                    last_error text,
                    last_notification_id uuid,
                    created_at double precision NOT NULL,
                    updated_at double precision NOT NULL,
                    canceled_at double precision,
                    lease_owner text,
                    lease_expires_at double precision
                )
                """,
                "CREATE INDEX scheduled_send_due ON scheduled_send (next_at) WHERE status = 'scheduled'",
                "CREATE INDEX scheduled_send_token ON scheduled_send (token_id, created_at)",
                "CREATE INDEX scheduled_send_device_scheduled ON scheduled_send (device_id) WHERE status = 'scheduled'",
            ]),
        Migration(
            version: 15, description: "receipts of notifications that repeat until acknowledged",
            statements: PostgresStore.receiptSchema),
        Migration(
            version: 16, description: "signed callbacks: the callback outbox and the tokens' outcome callback URLs",
            statements: [
                """
                CREATE TABLE callback (
                    id uuid PRIMARY KEY,
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    token_id uuid NOT NULL,
                    url text NOT NULL,
                    event text NOT NULL,
                    body bytea NOT NULL,
                    attempts bigint NOT NULL,
                    next_attempt_at double precision,
                    status text NOT NULL,
                    last_error text,
                    created_at double precision NOT NULL,
                    updated_at double precision NOT NULL,
                    lease_owner text,
                    lease_expires_at double precision
                )
                """,
                "CREATE INDEX callback_due ON callback (next_attempt_at) WHERE status = 'pending'",
                "CREATE INDEX callback_device ON callback (device_id)",
                "CREATE INDEX callback_finished ON callback (updated_at) WHERE status <> 'pending'",
                """
                CREATE TABLE token_callback (
                    token_id uuid PRIMARY KEY,
                    device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
                    url text NOT NULL,
                    updated_at double precision NOT NULL
                )
                """,
                "CREATE INDEX token_callback_device ON token_callback (device_id)",
            ]),
        Migration(
            version: 17, description: "topics and their members (issue 42)",
            statements: [
                """
                CREATE TABLE topic (
                    id uuid PRIMARY KEY,
                    topic_id_hash text NOT NULL UNIQUE,
                    join_code_hash text NOT NULL,
                    creator_id uuid NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    name text,
                    created_at double precision NOT NULL
                )
                """,
                "CREATE INDEX topic_creator ON topic (creator_id)",
                """
                CREATE TABLE topic_member (
                    id uuid PRIMARY KEY,
                    topic_id uuid NOT NULL REFERENCES topic(id) ON DELETE CASCADE,
                    device_id uuid NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    name text,
                    joined_at double precision NOT NULL,
                    UNIQUE (topic_id, device_id)
                )
                """,
                "CREATE INDEX topic_member_device ON topic_member (device_id)",
            ]),
        liveActivityTimestamps,  // PostgresStore+LiveActivityTimestamps.swift
        deviceAddressData,
        Migration(
            version: partitionVersion, description: "notifications, answers and events partitioned by day (issue 40, section 4)",
            statements: PostgresStore.partitionMigration),
        commitBatch,  // PostgresMigrations+CommitBatch.swift
        receiptPartitions,  // PostgresMigrations+ReceiptPartitions.swift
    ]

    /// The migration that partitions notifications by day (``PostgresStore/partitionMigration``).
    static let partitionVersion = 20

    /// The version the schema is at once every migration ran.
    static var latestVersion: Int { all.map(\.version).max() ?? 0 }

    /// Brings the schema up to date, under the advisory lock; throws ``StoreError/schemaTooNew(found:known:)`` when a
    /// newer Herald migrated the database past what this one knows.
    /// A database at `last` (tests make one of an earlier version, then open a store on it).
    static func migrate(_ client: PostgresClient, through last: Int) async throws {
        try await migrate(client, through: last, logger: Logger(label: "herald.store"))
    }

    /// `through`: the last version to migrate to.
    static func migrate(_ client: PostgresClient, through last: Int = .max, logger: Logger) async throws {
        do {
            try await migrateLocked(client, through: last, logger: logger)
        } catch let error as PostgresTransactionError {
            throw error.cause
        }
    }

    private static func migrateLocked(_ client: PostgresClient, through last: Int, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockClass), hashtext(current_schema()))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_version (
                    version integer PRIMARY KEY,
                    description text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            let current = try await version(of: connection.query(versionQuery, logger: logger))
            guard current <= latestVersion else { throw StoreError.schemaTooNew(found: current, known: latestVersion) }
            for migration in all where migration.version > current && migration.version <= last {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_version (version, description) VALUES (\(migration.version), \(migration.description))",
                    logger: logger)
                logger.info("Migrated the PostgreSQL schema", metadata: ["version": "\(migration.version)"])
            }
        }
    }

    /// The version the schema is at (0 before the first migration).
    static func currentVersion(_ client: PostgresClient) async throws -> Int {
        try await version(of: client.query(versionQuery))
    }

    private static let versionQuery: PostgresQuery = "SELECT coalesce(max(version), 0) FROM schema_version"

    private static func version(of rows: PostgresRowSequence) async throws -> Int {
        var current = 0
        for try await version in rows.decode(Int.self) { current = version }
        return current
    }
}
