import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import NIOCore
import Synchronization

/// A device the benchmark can send to: its USER_ID and device secret (as Herald handed them out, or derived).
struct DeviceIdentity: Sendable {
    var userID: String
    var secret: String

    /// The deterministic identity of seeded device `index` (so that a million of them need not be kept in memory).
    static func seeded(_ index: Int, salt: String) -> (identity: DeviceIdentity, token: String) {
        let userID = hex(SHA256.hash(data: Data("\(salt)-user-\(index)".utf8)))
        let secret = hex(SHA256.hash(data: Data("\(salt)-secret-\(index)".utf8)))
        let token = hex(SHA256.hash(data: Data("\(salt)-token-\(index)".utf8)))
        return (DeviceIdentity(userID: userID, secret: secret), token)
    }

    /// The FCM registration token of seeded device `index`, shaped like a real one: an instance id, `:APA91b` and
    /// base64url characters, 163 in all.
    static func fcmToken(_ index: Int, salt: String) -> String {
        let digest = (0..<3).map { hex(SHA256.hash(data: Data("\(salt)-fcm-token-\(index)-\($0)".utf8))) }.joined()
        return String(digest.prefix(22)) + ":APA91b" + String(digest.dropFirst(22).prefix(134))
    }

    /// The `POST /api/push/notify` body the benchmark sends (the README's Frigate example).
    func notifyBody() -> ByteBuffer {
        ByteBuffer(
            string: #"{"user_id":"\#(userID)","title":"Person detected","body":"Front Door","#
                + #""snapshot":{"type":"frigate_event","id":"1739987.123-abcdef"},"#
                + #""open":{"type":"frigate_event","id":"1739987.123-abcdef"}}"#
        )
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex, as `Secrets.hash` writes it.
    static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Registers devices over HTTP, as apps do.
enum Registration {
    /// Registers `count` devices with `concurrency` clients; returns their identities and the rate.
    static func register(
        count: Int, concurrency: Int, platform: Platform, client: LoadClient, salt: String, label: String,
        webPushSubscription: (@Sendable (Int) -> String)? = nil
    ) async -> (devices: [DeviceIdentity], result: ClosedLoopResult) {
        let registered = Mutex<[DeviceIdentity]>([])
        let result = await ClosedLoop.run(concurrency: concurrency, totalRequests: count, label: label) { index in
            // What an app of each platform sends (the bench plays the apps, so it knows each provider's wire form).
            let body =
                switch platform {
                case .websocket: #"{"platform":"websocket"}"#
                case .fcm: #"{"platform":"fcm","token":"\#(DeviceIdentity.fcmToken(index, salt: salt))"}"#
                case .webpush: #"{"platform":"webpush","subscription":\#(webPushSubscription?(index) ?? "null")}"#
                default: #"{"token":"\#(DeviceIdentity.seeded(index, salt: salt).token)","environment":"production"}"#
                }
            do {
                let (status, answer) = try await client.post("/api/push/register", body: ByteBuffer(string: body))
                guard status == 201,
                    case .object(let object) = try JSONValue.decode(Data(answer.readableBytesView)),
                    let userID = object["user_id"]?.stringValue, let secret = object["device_secret"]?.stringValue
                else {
                    return .failure(
                        BenchFailure(description: "register answered \(status): \(String(buffer: answer).prefix(200))"))
                }
                registered.withLock { $0.append(DeviceIdentity(userID: userID, secret: secret)) }
                return .success(())
            } catch {
                return .failure(BenchFailure(description: "register failed: \(error)"))
            }
        }
        return (registered.withLock { $0 }, result)
    }
}

/// Fills a Herald SQLite file with devices directly, for the store-scale and recovery scenarios: the schema comes from
/// `SQLiteStore` (its migrations), the rows are inserted in large transactions through GRDB, which is much faster than
/// a million registrations over HTTP. The rows are exactly those `SQLiteStore.insertDevice` writes.
enum Seeder {
    struct Seeded {
        var path: String
        var count: Int
        var salt: String
        var duration: Duration
        /// Pages in use × page size after a checkpoint, in bytes.
        var databaseBytes: Int
    }

    static func seed(path: String, count: Int, salt: String, label: String) async throws -> Seeded {
        let clock = ContinuousClock()
        let started = clock.now
        let store = try SQLiteStore(path: path)  // creates the schema
        try await store.close()

        // The stored hashes must be Secrets.hash of the identities; checked once here on the fast path.
        let sample = DeviceIdentity.seeded(0, salt: salt).identity
        precondition(DeviceIdentity.hex(SHA256.hash(data: Data(sample.userID.utf8))) == Secrets.hash(sample.userID))

        let queue = try DatabaseQueue(path: path)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = OFF")
            let statement = try db.makeStatement(
                sql: """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                        inactive_reason, daily_limit, created_at, updated_at)
                    VALUES (?, ?, ?, 'apns', 'production', ?, 1, NULL, NULL, ?, ?)
                    """)
            let now = Date().timeIntervalSince1970
            var index = 0
            while index < count {
                let end = min(count, index + 50_000)
                try db.inTransaction {
                    for item in index..<end {
                        let (identity, token) = DeviceIdentity.seeded(item, salt: salt)
                        try statement.execute(arguments: [
                            UUID().uuidString.lowercased(),
                            DeviceIdentity.hex(SHA256.hash(data: Data(identity.userID.utf8))),
                            DeviceIdentity.hex(SHA256.hash(data: Data(identity.secret.utf8))), token, now, now,
                        ])
                    }
                    return .commit
                }
                index = end
                Progress.shared.status("\(label): \(Format.grouped(Double(index))) of \(Format.grouped(Double(count))) devices")
            }
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let bytes = try await queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0) * (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        }
        try queue.close()
        Progress.shared.endStatus()
        return Seeded(path: path, count: count, salt: salt, duration: clock.now - started, databaseBytes: bytes)
    }

    /// The pending notifications of a store file, read after a crash: when each can be attempted again, in order, and
    /// how many the crashed instance held a lease on. A leased one (schema v3 and later: `lease_owner`,
    /// `lease_expires_at`) is taken back at once by an instance of the same name (`restartingOwner`), and by another
    /// only once its lease has expired: it can be attempted at its next attempt or, for another owner's lease, at the
    /// lease's expiry, whichever is later.
    static func pendingNotifications(path: String, restartingOwner: String) throws -> (due: [Date], leased: Int) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let columns = Set(try db.columns(in: "notification").map(\.name))
            guard columns.contains("lease_owner"), columns.contains("lease_expires_at") else {
                let due = try Double.fetchAll(
                    db, sql: "SELECT next_attempt_at FROM notification WHERE status = 'pending' ORDER BY next_attempt_at")
                return (due.map { Date(timeIntervalSince1970: $0) }, 0)
            }
            let due = try Double.fetchAll(
                db,
                sql: """
                    SELECT CASE WHEN lease_owner IS NOT NULL AND lease_owner != ? AND lease_expires_at > next_attempt_at
                        THEN lease_expires_at ELSE next_attempt_at END AS due
                    FROM notification WHERE status = 'pending' ORDER BY due
                    """, arguments: [restartingOwner])
            let leased =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM notification WHERE status = 'pending' AND lease_owner IS NOT NULL") ?? 0
            return (due.map { Date(timeIntervalSince1970: $0) }, leased)
        }
    }

    /// The name each notification of a store file was delivered under (`provider_message_id`: the `apns-id`, or FCM's
    /// `projects/…/messages/…`), by notification id. Opened read-only, so it can be read while Herald runs.
    static func providerMessageIDs(path: String) throws -> [String: String] {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var names: [String: String] = [:]
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, provider_message_id FROM notification WHERE provider_message_id IS NOT NULL")
            while let row = try rows.next() { names[row[0]] = row[1] }
            return names
        }
    }

    /// The size of a store file (pages in use × page size), in bytes.
    static func databaseBytes(path: String) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0) * (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        }
    }
}
