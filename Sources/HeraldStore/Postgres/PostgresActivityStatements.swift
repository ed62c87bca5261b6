import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// The writes of an activity change (``PostgresStore/changeActivities(deviceID:_:)``) as one prepared statement,
/// whatever the number of activities it writes: the rows as arrays (``PostgresColumn``), updated where they exist and
/// inserted where they do not. The change holds the device's row (`FOR NO KEY UPDATE`) and its activities' rows, so
/// no other change inserts or updates them between the two halves.
struct PostgresActivityUpserts: PostgresPreparedStatement {
    static let name = "herald_upsert_activities"
    /// `extras` is written only where the record read them (`extras_read`).
    static let sql = """
        WITH input AS (
            SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::float8[], $7::bytea[],
                $8::float8[], $9::bigint[], $10::bigint[], $11::bytea[], $12::float8[], $13::text[], $14::bigint[], $15::uuid[],
                $16::text[], $17::text[], $18::float8[], $19::bytea[], $20::boolean[], $21::text[])
                AS a (device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version, pushed_version,
                    pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token, lease_owner,
                    lease_expires_at, extras, extras_read, pushed_event)),
        updated AS (
            UPDATE activity SET state = i.state, priority = i.priority, created_at = i.created_at, updated_at = i.updated_at,
                document = i.document, next_due_at = i.next_due_at, version = i.version, pushed_version = i.pushed_version,
                pending_push = i.pending_push, push_due_at = i.push_due_at, pushed_state = i.pushed_state,
                pushed_timestamp = i.pushed_timestamp, in_flight_notification = i.in_flight_notification,
                update_token = i.update_token, lease_owner = i.lease_owner, lease_expires_at = i.lease_expires_at,
                pushed_event = i.pushed_event, extras = CASE WHEN i.extras_read THEN i.extras ELSE activity.extras END
            FROM input i WHERE activity.device_id = i.device_id AND activity.slug = i.slug
            RETURNING activity.device_id, activity.slug)
        INSERT INTO activity (device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version,
            pushed_version, pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token,
            lease_owner, lease_expires_at, extras, pushed_event)
        SELECT device_id, slug, state, priority, created_at, updated_at, document, next_due_at, version, pushed_version,
            pending_push, push_due_at, pushed_state, pushed_timestamp, in_flight_notification, update_token, lease_owner,
            lease_expires_at, extras, pushed_event
        FROM input i WHERE NOT EXISTS (SELECT 1 FROM updated u WHERE u.device_id = i.device_id AND u.slug = i.slug)
        """

    /// One record per slug.
    var records: [ActivityRecord]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 21)
        bindings.append(records.map(\.deviceID))
        bindings.append(records.map(\.slug))
        bindings.append(records.map(\.state))
        bindings.append(records.map(\.priority))
        bindings.append(records.map(\.createdAt.timeIntervalSince1970))
        bindings.append(records.map(\.updatedAt.timeIntervalSince1970))
        try bindings.append(PostgresBytesColumn(values: records.map(\.document)))
        try bindings.append(PostgresColumn(records.map { $0.nextDueAt?.timeIntervalSince1970 }))
        bindings.append(records.map(\.version))
        bindings.append(records.map(\.pushedVersion))
        try bindings.append(PostgresBytesColumn(values: records.map(\.pendingPush)))
        try bindings.append(PostgresColumn(records.map { $0.pushDueAt?.timeIntervalSince1970 }))
        try bindings.append(PostgresColumn(records.map(\.pushedState)))
        try bindings.append(PostgresColumn(records.map(\.pushedTimestamp)))
        try bindings.append(PostgresColumn(records.map(\.inFlightNotification)))
        try bindings.append(PostgresColumn(records.map(\.updateToken)))
        try bindings.append(PostgresColumn(records.map { $0.lease?.owner }))
        try bindings.append(PostgresColumn(records.map { $0.lease?.expiresAt.timeIntervalSince1970 }))
        try bindings.append(PostgresBytesColumn(values: records.map(\.extras)))
        bindings.append(records.map(\.extrasRead))
        try bindings.append(PostgresColumn(records.map { $0.pushedEvent?.rawValue }))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}
