import Foundation
import GRDB
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

/// SQLite v22 and PostgreSQL 19 on a database written before them: a Web Push device's keys, in columns of their own
/// until then, are its address data in Web Push's form (`WebPushKeys.addressData`), and every other device has none.
@Suite("Migration: a device's address data")
struct DeviceAddressMigrationTests {
    static let p256dh = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
    static let auth = "tBHItJI5svbpez7KI4CCXg"
    static let keysData = #"{"p256dh":"\#(p256dh)","auth":"\#(auth)"}"#
    static let endpoint = "https://fcm.googleapis.com/fcm/send/abc"

    /// The rows a Herald before the migration wrote: a Web Push device with its keys, an APNs device without.
    static func olderRows() -> (webPush: Device, apple: Device) {
        (Fixtures.device(platform: .webpush, token: endpoint).device, Fixtures.device(token: Fixtures.apnsToken(0xCD)).device)
    }

    @Test func sqliteV22MovesWebPushKeysIntoTheAddressData() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let (webPush, apple) = Self.olderRows()
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteMigrations.migrator.migrate(queue, upTo: "v20: topics and their members (issue 42)")
            try await queue.write { db in
                for (device, keys) in [(webPush, (Self.p256dh, Self.auth) as (String, String)?), (apple, nil)] {
                    try db.execute(
                        sql: """
                            INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                                created_at, updated_at, webpush_p256dh, webpush_auth) VALUES (?, ?, ?, ?, 'production', ?, 1, 0, 0, ?, ?)
                            """,
                        arguments: [
                            device.id.uuidString.lowercased(), device.userIDHash, device.secretHash, device.platform.rawValue,
                            device.token, keys?.0, keys?.1,
                        ])
                }
            }
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        #expect(try await store.device(id: webPush.id)?.address == PushAddress(token: Self.endpoint, data: Self.keysData))
        #expect(try await store.device(id: apple.id)?.address == PushAddress(token: Fixtures.apnsToken(0xCD)))
        let columns = try await store.read { db in try db.columns(in: "device").map(\.name) }
        #expect(!columns.contains("webpush_p256dh") && !columns.contains("webpush_auth") && columns.contains("address_data"))
        try await store.close()
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func postgresVersion19MovesWebPushKeysIntoTheAddressData() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let (webPush, apple) = Self.olderRows()
        try await PostgresTestDatabase.withClient(configuration) { client in
            _ = try await client.query(
                "CREATE TABLE schema_version (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
            for migration in PostgresMigrations.all where migration.version < PostgresMigrations.deviceAddressData.version {
                for statement in migration.statements { _ = try await client.query(PostgresQuery(unsafeSQL: statement)) }
                _ = try await client.query(
                    "INSERT INTO schema_version (version, description) VALUES (\(migration.version), \(migration.description))")
            }
            for (device, keys) in [(webPush, (Self.p256dh, Self.auth) as (String, String)?), (apple, nil)] {
                _ = try await client.query(
                    """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active, created_at,
                        updated_at, webpush_p256dh, webpush_auth)
                    VALUES (\(device.id), \(device.userIDHash), \(device.secretHash), \(device.platform.rawValue), 'production',
                        \(device.token), true, 0, 0, \(keys?.0), \(keys?.1))
                    """)
            }
        }
        let store = try await PostgresTestDatabase.openStore(configuration)
        #expect(try await store.schemaVersion() == PostgresMigrations.latestVersion)
        #expect(try await store.device(id: webPush.id)?.address == PushAddress(token: Self.endpoint, data: Self.keysData))
        #expect(try await store.device(id: apple.id)?.address == PushAddress(token: Fixtures.apnsToken(0xCD)))
        try await store.close()
    }
}
