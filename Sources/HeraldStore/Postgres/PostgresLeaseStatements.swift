import Foundation
import HeraldCore
import PostgresNIO

/// The statements delivery runs outside a batch: claims, the outbox's next attempts and the lease heartbeat. Each is
/// a named prepared statement (prepared once per connection: PostgreSQL parses it once, not at every claim), as the
/// batch's own are (``PostgresBatchStatements``).
enum PostgresLeaseStatements {
    /// Claims the given notifications that are pending, due and free. The sub-select locks the rows it claims and
    /// skips those another claim is locking: concurrent claims (from any instance) never wait for each other and never
    /// take the same notification.
    struct ClaimByID: PostgresPreparedStatement {
        static let name = "herald_claim_by_id"
        static var sql: String {
            """
            UPDATE notification SET lease_owner = $2::text, lease_expires_at = $3::float8
            WHERE id IN (
                SELECT id FROM notification
                WHERE id = ANY($1::uuid[]) AND status = 'pending' AND next_attempt_at <= $4::float8
                    AND (lease_owner IS NULL OR lease_expires_at <= $4::float8)
                FOR UPDATE SKIP LOCKED)
            RETURNING \(PostgresStore.notificationColumns)
            """
        }
        typealias Row = PushNotification

        var ids: [PushNotification.ID]
        var lease: Lease
        var now: Date

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(ids)
            bindings.append(lease.owner)
            bindings.append(lease.expiresAt.timeIntervalSince1970)
            bindings.append(now.timeIntervalSince1970)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresStore.notification(row) }
    }

    /// Claims a device's pending notifications that nobody holds, due or not, oldest first (a client of it connected,
    /// or it registered again), and takes them out of the parked ones.
    struct ClaimPending: PostgresPreparedStatement {
        static let name = "herald_claim_pending"
        static var sql: String {
            """
            UPDATE notification SET lease_owner = $2::text, lease_expires_at = $3::float8, parked = false
            WHERE id IN (
                SELECT id FROM notification
                WHERE device_id = $1::uuid AND status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= $4::float8)
                ORDER BY created_at, id LIMIT $5::bigint
                FOR UPDATE SKIP LOCKED)
            RETURNING \(PostgresStore.notificationColumns)
            """
        }
        typealias Row = PushNotification

        var deviceID: Device.ID
        var lease: Lease
        var now: Date
        var limit: Int

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(deviceID)
            bindings.append(lease.owner)
            bindings.append(lease.expiresAt.timeIntervalSince1970)
            bindings.append(now.timeIntervalSince1970)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresStore.notification(row) }
    }

    /// Pending notifications nobody holds (or whose lease expired), earliest next attempt first.
    struct ScheduledAttempts: PostgresPreparedStatement {
        static let name = "herald_scheduled_attempts"
        static let sql = """
            SELECT id, next_attempt_at, device_id FROM notification
            WHERE status = 'pending' AND (lease_owner IS NULL OR lease_expires_at <= $1::float8)
            ORDER BY next_attempt_at LIMIT $2::bigint
            """
        typealias Row = ScheduledAttempt

        var now: Date
        var limit: Int

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(now.timeIntervalSince1970)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (id, dueAt, deviceID) = try row.decode((UUID, Double, UUID).self)
            return ScheduledAttempt(id: id, dueAt: Date(timeIntervalSince1970: dueAt), deviceID: deviceID)
        }
    }

    /// Extends every lease an instance holds (its heartbeat while deliveries are in flight).
    struct RenewLeases: PostgresPreparedStatement {
        static let name = "herald_renew_leases"
        static let sql = "UPDATE notification SET lease_expires_at = $2::float8 WHERE lease_owner = $1::text"
        typealias Row = Void

        var owner: String
        var expiry: Date

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(owner)
            bindings.append(expiry.timeIntervalSince1970)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}
