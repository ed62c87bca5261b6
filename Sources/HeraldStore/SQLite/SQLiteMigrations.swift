import GRDB

/// The versioned schema of the SQLite store. Migrations run at startup; a migration, once released,
/// is never edited: add a new one.
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: devices, notifications, quota counters") { db in
            try db.execute(
                sql: """
                    CREATE TABLE device (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id_hash TEXT NOT NULL UNIQUE,
                        secret_hash TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        token TEXT,
                        is_active INTEGER NOT NULL,
                        inactive_reason TEXT,
                        daily_limit INTEGER,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL
                    );
                    CREATE UNIQUE INDEX device_platform_token ON device(platform, token) WHERE token IS NOT NULL;

                    CREATE TABLE notification (
                        id TEXT PRIMARY KEY NOT NULL,
                        device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                        push_type TEXT NOT NULL,
                        priority INTEGER NOT NULL,
                        collapse_id TEXT,
                        payload BLOB NOT NULL,
                        quota_day TEXT,
                        status TEXT NOT NULL,
                        attempts INTEGER NOT NULL,
                        last_error TEXT,
                        provider_message_id TEXT,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL,
                        next_attempt_at REAL NOT NULL,
                        expires_at REAL NOT NULL
                    );
                    CREATE INDEX notification_due ON notification(next_attempt_at) WHERE status = 'pending';
                    CREATE INDEX notification_device_pending ON notification(device_id, created_at) WHERE status = 'pending';

                    CREATE TABLE quota_counter (
                        device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                        day TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        successful INTEGER NOT NULL DEFAULT 0,
                        errors INTEGER NOT NULL DEFAULT 0,
                        total INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (device_id, day)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v2: api tokens") { db in
            try db.execute(
                sql: """
                    CREATE TABLE api_token (
                        id TEXT PRIMARY KEY NOT NULL,
                        device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        token_hash TEXT NOT NULL UNIQUE,
                        created_at REAL NOT NULL,
                        last_used_at REAL,
                        revoked_at REAL
                    );
                    CREATE UNIQUE INDEX api_token_active_name ON api_token(device_id, name) WHERE revoked_at IS NULL;
                    CREATE INDEX api_token_device ON api_token(device_id, created_at);
                    """)
        }
        migrator.registerMigration("v3: delivery leases, parked notifications, quota notice") { db in
            try db.execute(
                sql: """
                    ALTER TABLE notification ADD COLUMN lease_owner TEXT;
                    ALTER TABLE notification ADD COLUMN lease_expires_at REAL;
                    ALTER TABLE notification ADD COLUMN parked INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX notification_lease ON notification(lease_owner) WHERE lease_owner IS NOT NULL;
                    CREATE INDEX notification_parked ON notification(device_id) WHERE parked = 1;
                    ALTER TABLE quota_counter ADD COLUMN limit_announced INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        migrator.registerMigration("v4: a token may be bound to several devices; lowercase APNs tokens; device count") { db in
            try db.execute(
                sql: """
                    DROP INDEX device_platform_token;
                    UPDATE device SET token = lower(token) WHERE platform = 'apns' AND token IS NOT NULL;
                    CREATE INDEX device_platform_token ON device(platform, token) WHERE token IS NOT NULL;

                    CREATE TABLE device_count (
                        id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
                        count INTEGER NOT NULL
                    );
                    INSERT INTO device_count (id, count) SELECT 1, COUNT(*) FROM device;
                    CREATE TRIGGER device_count_insert AFTER INSERT ON device
                    BEGIN UPDATE device_count SET count = count + 1 WHERE id = 1; END;
                    CREATE TRIGGER device_count_delete AFTER DELETE ON device
                    BEGIN UPDATE device_count SET count = count - 1 WHERE id = 1; END;
                    """)
        }
        migrator.registerMigration("v5: a table for the readiness probe's rolled-back write") { db in
            try db.execute(sql: "CREATE TABLE readiness_probe (filler BLOB)")
        }
        migrator.registerMigration("v6: indexes for the operator dashboard (recent changes, a device's notifications)") { db in
            try db.execute(
                sql: """
                    CREATE INDEX notification_updated ON notification(updated_at);
                    CREATE INDEX notification_device_updated ON notification(device_id, updated_at);
                    """)
        }
        migrator.registerMigration("v7: a device's notifications by acceptance, an index that outcomes do not rewrite") { db in
            // (device_id, updated_at) changed with every outcome: two more pages at random places in the file per
            // delivery (a delete and an insert), 181 against 71 log pages for a commit of 52 outcomes
            // (docs/performance.md). (device_id, created_at) is written once, at the accept.
            try db.execute(
                sql: """
                    DROP INDEX notification_device_updated;
                    CREATE INDEX notification_device_created ON notification(device_id, created_at);
                    """)
        }
        migrator.registerMigration("v8: the Live Activity token a notification goes to instead of its device's token") { db in
            try db.execute(sql: "ALTER TABLE notification ADD COLUMN live_activity_token TEXT")
        }
        migrator.registerMigration("v9: a daily count of notifications exempt from the quota") { db in
            try db.execute(sql: "ALTER TABLE quota_counter ADD COLUMN exempt INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v10: a notification's provider-neutral content and the renderer of its payload") { db in
            try db.execute(
                sql: """
                    ALTER TABLE notification ADD COLUMN content BLOB;
                    ALTER TABLE notification ADD COLUMN rendered_by TEXT;
                    """)
        }
        migrator.registerMigration("v11: a Web Push device's subscription keys") { db in
            try db.execute(
                sql: """
                    ALTER TABLE device ADD COLUMN webpush_p256dh TEXT;
                    ALTER TABLE device ADD COLUMN webpush_auth TEXT;
                    CREATE TABLE server_setting (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                    """)
        }
        migrator.registerMigration("v12: API token scopes and slugs; a device's push-to-start token") { db in
            try db.execute(
                sql: """
                    ALTER TABLE api_token ADD COLUMN scopes TEXT;
                    ALTER TABLE api_token ADD COLUMN slugs TEXT;
                    ALTER TABLE device ADD COLUMN push_to_start_token TEXT;
                    """)
        }
        migrator.registerMigration("v13: PushWard activities") { db in
            // One row per (device, slug): the columns delivery and the scheduler query, the rest as the activity's
            // JSON document (ActivityStore.swift).
            try db.execute(
                sql: """
                    CREATE TABLE activity (
                        device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                        slug TEXT NOT NULL,
                        state TEXT NOT NULL,
                        priority INTEGER NOT NULL,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL,
                        document BLOB NOT NULL,
                        next_due_at REAL,
                        version INTEGER NOT NULL,
                        pushed_version INTEGER NOT NULL,
                        pending_push BLOB,
                        push_due_at REAL,
                        pushed_state TEXT,
                        pushed_timestamp INTEGER,
                        in_flight_notification TEXT,
                        update_token TEXT,
                        lease_owner TEXT,
                        lease_expires_at REAL,
                        PRIMARY KEY (device_id, slug)
                    );
                    CREATE INDEX activity_push_due ON activity(push_due_at) WHERE push_due_at IS NOT NULL;
                    CREATE INDEX activity_next_due ON activity(next_due_at) WHERE next_due_at IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v14: an activity's extras (timeline history, log backlog) apart from its document") { db in
            // Rows written before keep both inside `document`; they move to `extras` at their next change.
            try db.execute(sql: "ALTER TABLE activity ADD COLUMN extras BLOB")
        }
        migrator.registerMigration("v15: answers to notifications and the events the app reports (issue 39)") { db in
            // Both go with their notification (ON DELETE CASCADE). One event of each kind per notification.
            try db.execute(
                sql: """
                    CREATE TABLE notification_answer (
                        notification_id TEXT PRIMARY KEY NOT NULL REFERENCES notification(id) ON DELETE CASCADE,
                        action_id TEXT NOT NULL,
                        answer_text TEXT,
                        answered_at REAL NOT NULL
                    );
                    CREATE TABLE notification_event (
                        notification_id TEXT NOT NULL REFERENCES notification(id) ON DELETE CASCADE,
                        event TEXT NOT NULL,
                        reported_at REAL NOT NULL,
                        PRIMARY KEY (notification_id, event)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v16: when a device was last heard from (idle devices)") { db in
            // NULL until the device is first heard from: its registration (`updated_at`) stands for it until then.
            try db.execute(sql: "ALTER TABLE device ADD COLUMN last_seen_at REAL")
        }
        migrator.registerMigration("v17: scheduled sends") { db in
            try db.execute(sql: SQLiteStore.scheduledSendSchema)
        }
        migrator.registerMigration("v18: receipts of notifications that repeat until acknowledged") { db in
            try db.execute(sql: SQLiteStore.receiptSchema)
        }
        migrator.registerMigration("v19: signed callbacks: the callback outbox and the tokens' outcome callback URLs") { db in
            try db.execute(sql: SQLiteStore.callbackSchema)
        }
        migrator.registerMigration("v20: topics and their members (issue 42)") { db in
            try db.execute(sql: SQLiteStore.topicSchema)
        }
        migrator.registerMigration("v21: Live Activity timestamps per token; the event of an activity's last push (issue 38)") { db in
            try db.execute(sql: SQLiteStore.liveActivityTimestampSchema)
        }
        migrator.registerMigration("v22: a device's address data, opaque to the store (Web Push's keys move into it)") { db in
            try db.execute(sql: SQLiteStore.addressDataMigration)
        }
        return migrator
    }
}
