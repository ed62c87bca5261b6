import Foundation
import HeraldCore
import PostgresNIO
@testable import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// `herald_commit_batch` (migration 21): the whole batch in one statement decides as ``BatchQuotaLedger`` decides,
/// refuses to write after its deadline, and arrives on an existing database by migration.
@Suite("PostgreSQL store: the batch in one statement")
struct PostgresCommitFunctionTests {
    /// A deterministic generator (SplitMix64): the same batches in every run.
    private struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// 40 batches of mixed accepts (limited, exempt with and without a cap, backlog bounds, some not counted as attempts,
    /// two days) and failed outcomes over five devices: every decision, every counter and every stored notification are
    /// what the ledger (the decisions the statements one by one made) says.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func itDecidesAsTheLedgerDoes() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        var random = Seeded(state: 40)
        let devices = (0..<5).map { _ in Fixtures.device().device }
        for device in devices { try await store.insertDevice(device) }
        let days = [UTCDay(containing: start).description, UTCDay(containing: start.addingTimeInterval(86_400)).description]
        let lease = Lease(owner: "instance-1", expiresAt: start.addingTimeInterval(600))
        var expectedCounters: [BatchQuotaLedger.Key: BatchQuotaLedger.Row] = [:]
        var pending: [Device.ID: Int] = [:]
        var held: [PushNotification] = []  // accepted, pending, leased: candidates for outcomes
        var accepted = 0
        for round in 0..<40 {
            var accepts: [AcceptRequest] = []
            for _ in 0..<Int.random(in: 1...24, using: &random) {
                let device = devices.randomElement(using: &random)!
                let day = days.randomElement(using: &random)!
                var notification = Fixtures.notification(for: device, at: start, quotaDay: day)
                if Int.random(in: 0..<6, using: &random) == 0 { notification.status = .delivered }
                let exempt = Int.random(in: 0..<4, using: &random) == 0
                let quota = QuotaRequest(
                    day: day, maximum: exempt ? nil : Int.random(in: 0...12, using: &random),
                    countsAttempt: Int.random(in: 0..<5, using: &random) != 0,
                    exemptMaximum: exempt && Bool.random(using: &random) ? Int.random(in: 0...4, using: &random) : nil,
                    pendingMaximum: Bool.random(using: &random) ? Int.random(in: 0...20, using: &random) : nil)
                accepts.append(AcceptRequest(notification: notification, quota: quota, lease: lease))
            }
            held.shuffle(using: &random)
            let failing = Array(held.prefix(Int.random(in: 0...3, using: &random)))
            held.removeFirst(failing.count)
            let outcomes = failing.map { notification in
                var failed = notification
                failed.status = .failed
                failed.lastError = "Unregistered"
                return DeliveryOutcome(notification: failed, releasesQuota: true)
            }
            // What the ledger decides from the counters and backlogs as they stand.
            for outcome in failing { pending[outcome.deviceID, default: 0] -= 1 }
            var ledger = BatchQuotaLedger(counters: expectedCounters, pending: pending)
            let expected = accepts.map { ledger.decide($0) }
            for outcome in failing { if let day = outcome.quotaDay { ledger.release(.init(deviceID: outcome.deviceID, day: day)) } }
            let before = store.statements.total
            let decisions = try await store.commit(WriteBatch(accepts: accepts, outcomes: outcomes, owner: lease.owner))
            if round > 0 { #expect(store.statements.total - before == 1) }  // the first makes the day's partitions
            #expect(decisions == expected)
            expectedCounters = ledger.counters
            for (request, decision) in zip(accepts, decisions) {
                guard case .accepted = decision else { continue }
                accepted += 1
                if request.notification.status == .pending {
                    pending[request.notification.deviceID, default: 0] += 1
                    held.append(request.notification)
                }
            }
        }
        for (key, row) in expectedCounters {
            let stored = try await store.quotaCounters(deviceID: key.deviceID, day: key.day)
            #expect(stored == row.counters, "\(key)")
        }
        let stored = try await store.read("SELECT count(*) FROM notification").first?.decode(Int.self)
        #expect(stored == accepted)
        #expect(accepted > 40 && accepted < 40 * 24)
        try await store.close()
    }

    /// A statement that reaches the database after its deadline (a network that held it) writes nothing.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aBatchPastItsDeadlineWritesNothing() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let day = UTCDay(containing: start).description
        let accept = AcceptRequest(notification: Fixtures.notification(for: device, at: start), quota: QuotaRequest(day: day, maximum: 5))
        _ = try await store.commit(WriteBatch(accepts: [accept], owner: "a"))  // the day's partitions
        let late = AcceptRequest(notification: Fixtures.notification(for: device, at: start), quota: QuotaRequest(day: day, maximum: 5))
        let statement = PostgresCommitStatement(
            outcomes: [], owner: "a", accepts: [late], deadline: Date().timeIntervalSince1970 - 1)
        let error = await #expect(throws: PostgresStoreError.self) { try await store.write(statement) }
        #expect(error?.sqlState == "57014")
        #expect(try await store.notification(id: late.notification.id) == nil)
        #expect(try await store.quotaCounters(deviceID: device.id, day: day).attempts == 1)
        let onTime = PostgresCommitStatement(
            outcomes: [], owner: "a", accepts: [late], deadline: Date().timeIntervalSince1970 + 60)
        #expect(try await store.write(onTime).map(\.index) == [1])
        #expect(try await store.notification(id: late.notification.id) != nil)
        try await store.close()
    }

    /// A database at version 20 with a device, pending notifications and counters migrates to 21 (and on) and takes
    /// batches: the counters go on from where they were, the pending notifications count against the backlog bound.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func anExistingDatabaseMigratesAndGoesOn() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let device = Fixtures.device().device
        let day = UTCDay(containing: start).description
        let old = (0..<3).map { _ in Fixtures.notification(for: device, at: start) }
        try await PostgresTestDatabase.withClient(configuration) { client in
            // What version 20's store wrote for three accepts of a limit of 5: the notifications and the day's counters.
            try await PostgresMigrations.migrate(client, through: PostgresMigrations.commitBatch.version - 1)
            #expect(try await PostgresMigrations.currentVersion(client) == 20)
            try await client.query(
                """
                INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active, created_at, updated_at)
                VALUES (\(device.id), \(device.userIDHash), \(device.secretHash), \(device.platform.rawValue),
                    \(device.environment.rawValue), \(device.token), true, \(device.createdAt.timeIntervalSince1970),
                    \(device.updatedAt.timeIntervalSince1970))
                """)
            let days = [Int(start.timeIntervalSince1970 / 86_400)]
            try await client.query("SELECT herald_notification_partitions(\(days)::integer[])")
            for notification in old {
                try await client.query(
                    """
                    INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status, attempts,
                        created_at, updated_at, next_attempt_at, expires_at)
                    VALUES (\(notification.id), \(notification.deviceID), \(notification.pushType.rawValue), \(notification.priority.apnsValue),
                        \(notification.collapseID), \(notification.payload), \(notification.quotaDay), 'pending', 0,
                        \(notification.createdAt.timeIntervalSince1970), \(notification.updatedAt.timeIntervalSince1970),
                        \(notification.nextAttemptAt.timeIntervalSince1970), \(notification.expiresAt.timeIntervalSince1970))
                    """)
            }
            try await client.query(
                "INSERT INTO quota_counter (device_id, day, attempts, successful, errors, total) VALUES (\(device.id), \(day), 3, 3, 0, 3)")
        }
        let store = try await PostgresTestDatabase.openStore(configuration)
        #expect(try await store.schemaVersion() == PostgresMigrations.latestVersion)
        let more = (0..<4).map { _ in
            AcceptRequest(notification: Fixtures.notification(for: device, at: start), quota: QuotaRequest(day: day, maximum: 5, pendingMaximum: 4))
        }
        let decisions = try await store.commit(WriteBatch(accepts: more, owner: "a"))
        let counters = { (attempts: Int, successful: Int) in QuotaCounters(attempts: attempts, successful: successful, errors: 0, total: successful) }
        #expect(decisions == [.accepted(counters(4, 4), usedUpQuota: false), .backlogFull(counters(5, 4)),
                              .backlogFull(counters(6, 4)), .backlogFull(counters(7, 4))])
        try await store.close()
    }
}
