import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import PostgresNIO
import Synchronization
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)  // a UTC midnight
private let day: TimeInterval = 86_400
private let startDay = Int(start.timeIntervalSince1970 / day)

/// Issue 40, section 4: receipts partitioned by the day they were created on (migration 22); retention drops a day
/// whose receipts all ended, never one that holds an active receipt.
@Suite("PostgreSQL store: receipt partitions")
struct PostgresReceiptPartitionTests {
    /// An active receipt of `device` created at `at`: repeats every minute for an hour.
    static func receipt(for device: Device, at: Date, collapse: String = "leak", tags: [String] = []) -> Receipt {
        Receipt(
            deviceID: device.id, tokenID: UUID(), collapseID: collapse, collapseIDGiven: true, tags: tags,
            content: Data(#"{"title":"Water"}"#.utf8), repeatSeconds: 60, expiresAt: at.addingTimeInterval(3_600),
            nextRepeatAt: at.addingTimeInterval(60), createdAt: at)
    }

    /// The partition a receipt's row is in.
    static func partition(of id: Receipt.ID, in store: PostgresStore) async throws -> String? {
        try await store.read("SELECT tableoid::regclass::text FROM notification_receipt WHERE id = \(id)").first?.decode(String.self)
    }

    /// How many partitions the receipts have, counted by the catalogue.
    static func partitionCount(in store: PostgresStore) async throws -> Int {
        try await store.read("SELECT count(*) FROM pg_inherits WHERE inhparent = 'notification_receipt'::regclass").first?.decode(Int.self) ?? -1
    }

    static func exists(_ table: String, in store: PostgresStore) async throws -> Bool {
        try await store.read("SELECT to_regclass(\(table)) IS NOT NULL").first?.decode(Bool.self) ?? false
    }

    /// A database of version 21 with receipts of three days (acknowledged, expired, canceled, active) keeps every row
    /// and its values once migrated, each in its day's partition, the indexes too; the active one repeats on.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func receiptsOfTheEarlierSchemaMigrateIntoTheirDaysPartitions() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let device = Fixtures.device().device
        var acknowledged = Self.receipt(for: device, at: start - 2 * day + 3_600, tags: ["water", "basement"])
        acknowledged.notificationID = UUID()
        acknowledged.repeatsSent = 3
        acknowledged.status = .acknowledged
        acknowledged.actionID = "pw_ack"
        acknowledged.acknowledgedByDevice = device.id
        acknowledged.endedAt = acknowledged.createdAt + 200
        var expired = Self.receipt(for: device, at: start - day + 7_200.25, collapse: "pw-ack-x")
        expired.collapseIDGiven = false
        expired.status = .expired
        expired.endedAt = expired.expiresAt
        var canceled = Self.receipt(for: device, at: start - day + 80_000)
        canceled.status = .canceled
        canceled.cancelReason = "canceled_by_sender"
        canceled.endedAt = canceled.createdAt + 5
        var active = Self.receipt(for: device, at: start + 30)
        active.notificationID = UUID()
        let receipts = [acknowledged, expired, canceled, active]
        try await PostgresTestDatabase.withClient(configuration) { client in
            try await PostgresMigrations.migrate(client, through: PostgresMigrations.receiptPartitions.version - 1)
            try await client.query(
                """
                INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active, created_at, updated_at)
                VALUES (\(device.id), \(device.userIDHash), \(device.secretHash), \(device.platform.rawValue),
                    \(device.environment.rawValue), \(device.token), true, \(device.createdAt.timeIntervalSince1970),
                    \(device.updatedAt.timeIntervalSince1970))
                """)
            for receipt in receipts {
                try await client.query(
                    """
                    INSERT INTO notification_receipt (id, notification_id, device_id, token_id, collapse_id, collapse_id_given, tags,
                        content, repeat_seconds, expires_at, next_repeat_at, repeats_sent, status, action_id, acknowledged_by_device,
                        cancel_reason, created_at, ended_at, lease_owner, lease_expires_at)
                    VALUES (\(receipt.id), \(receipt.notificationID), \(receipt.deviceID), \(receipt.tokenID), \(receipt.collapseID),
                        \(receipt.collapseIDGiven), \(ReceiptTags.text(receipt.tags)), \(receipt.content), \(receipt.repeatSeconds),
                        \(receipt.expiresAt.timeIntervalSince1970), \(receipt.nextRepeatAt.timeIntervalSince1970), \(receipt.repeatsSent),
                        \(receipt.status.rawValue), \(receipt.actionID), \(receipt.acknowledgedByDevice), \(receipt.cancelReason),
                        \(receipt.createdAt.timeIntervalSince1970), \(receipt.endedAt?.timeIntervalSince1970), NULL, NULL)
                    """)
            }
        }

        let store = try await PostgresTestDatabase.openStore(configuration)
        #expect(try await store.schemaVersion() == PostgresMigrations.latestVersion)
        #expect(try await store.partitionedDays(of: "notification_receipt") == [startDay - 2, startDay - 1, startDay])
        #expect(try await Self.partitionCount(in: store) == 3)
        #expect(try await !Self.exists("notification_receipt_v21", in: store))
        for receipt in receipts {
            #expect(try await store.receipt(id: receipt.id) == receipt)
            let receiptDay = Int((receipt.createdAt.timeIntervalSince1970 / day).rounded(.down))
            #expect(try await Self.partition(of: receipt.id, in: store) == "notification_receipt_d\(receiptDay)")
        }
        let indexes = try await store.read(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'notification_receipt' ORDER BY indexname"
        ).map { try $0.decode(String.self) }
        #expect(
            indexes == [
                "notification_receipt_device_active", "notification_receipt_due", "notification_receipt_ended", "notification_receipt_pkey",
                "notification_receipt_token_active",
            ])
        #expect(try await store.activeReceipts(tokenID: active.tokenID) == [active])
        let claimed = try await store.claimDueReceipts(at: start + 90, lease: Lease(owner: "a", expiresAt: start + 200), limit: 10)
        #expect(claimed == [active])
        let repeated = ReceiptRules.afterRepeat(active, sentAt: start + 90)
        #expect(try await store.completeReceiptRepeat(repeated, owner: "a"))
        #expect(try await store.receipt(id: active.id) == repeated)
        // A receipt of a new day gets its partition; the device's removal still takes every receipt.
        let fresh = Self.receipt(for: device, at: start + day + 5)
        #expect(try await store.insertReceipt(fresh, maximumActivePerDevice: 25))
        #expect(try await Self.partition(of: fresh.id, in: store) == "notification_receipt_d\(startDay + 1)")
        try await store.deleteDevice(id: device.id)
        #expect(try await store.receipts(ids: receipts.map(\.id) + [fresh.id]).isEmpty)
        try await store.close()
    }

    /// A pass drops a day whose receipts all ended before the cutoff (its partition is gone), keeps a day that holds an
    /// active receipt (its ended receipts past the cutoff go as rows; the active one repeats on), and leaves a day that
    /// has not ended before the cutoff to go whole later.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aPassDropsAnEndedDayAndKeepsADayWithAnActiveReceipt() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        // Day 0: acknowledged and expired. Day 1: one active (its instance was down), one canceled, one expired.
        let dayZero = [Self.receipt(for: device, at: start + 60), Self.receipt(for: device, at: start + 3_600)]
        let active = Self.receipt(for: device, at: start + day + 60)
        let dayOneEnded = [Self.receipt(for: device, at: start + day + 120), Self.receipt(for: device, at: start + day + 180)]
        for receipt in dayZero + [active] + dayOneEnded { #expect(try await store.insertReceipt(receipt, maximumActivePerDevice: 25)) }
        _ = try await store.activateReceipt(id: active.id, notificationID: UUID(), at: start + day + 61)
        _ = try await store.endReceipt(id: dayZero[0].id, .acknowledged(actionID: "pw_ack", byDevice: device.id), at: start + 600)
        _ = try await store.endReceipt(id: dayZero[1].id, .expired, at: start + 7_200)
        _ = try await store.endReceipt(id: dayOneEnded[0].id, .canceled(reason: "canceled_by_sender"), at: start + day + 200)
        _ = try await store.endReceipt(id: dayOneEnded[1].id, .expired, at: start + day + 3_780)
        #expect(try await store.partitionedDays(of: "notification_receipt") == [startDay, startDay + 1])

        // Three days later: day 0 goes whole (2), day 1's two ended receipts go as rows.
        let cutoff = start + 3 * day
        #expect(try await store.deleteEndedReceipts(before: cutoff, limit: 100) == 4)
        #expect(try await store.partitionedDays(of: "notification_receipt") == [startDay + 1])
        #expect(try await Self.partitionCount(in: store) == 1)
        #expect(try await !Self.exists("notification_receipt_d\(startDay)", in: store))
        #expect(store.receiptRowDeletions.total == 2)
        #expect(try await store.receipts(ids: (dayZero + dayOneEnded).map(\.id)).isEmpty)
        #expect(try await store.deleteEndedReceipts(before: cutoff, limit: 100) == 0)
        // The active receipt, however old, stays and repeats.
        #expect(try await store.receipt(id: active.id)?.status == .active)
        let claimed = try await store.claimDueReceipts(at: cutoff, lease: Lease(owner: "a", expiresAt: cutoff + 60), limit: 10)
        #expect(claimed.map(\.id) == [active.id])
        #expect(try await store.completeReceiptRepeat(ReceiptRules.afterRepeat(claimed[0], sentAt: cutoff), owner: "a"))
        #expect(try await store.receipt(id: active.id)?.repeatsSent == 1)

        // Expired at the cutoff: its day goes once the cutoff passed its end, not before.
        _ = try await store.endReceipt(id: active.id, .expired, at: cutoff)
        #expect(try await store.deleteEndedReceipts(before: cutoff, limit: 100) == 0)
        #expect(try await store.partitionedDays(of: "notification_receipt") == [startDay + 1])
        #expect(try await store.deleteEndedReceipts(before: cutoff + 60, limit: 100) == 1)
        #expect(try await Self.partitionCount(in: store) == 0)
        #expect(store.receiptRowDeletions.total == 2)

        // Today's ended receipt, past a short retention, is not deleted as a row: it goes with its day once that ended.
        let today = Self.receipt(for: device, at: cutoff + 120)
        #expect(try await store.insertReceipt(today, maximumActivePerDevice: 25))
        _ = try await store.endReceipt(id: today.id, .acknowledged(actionID: "pw_ack", byDevice: device.id), at: cutoff + 180)
        #expect(try await store.deleteEndedReceipts(before: cutoff + 3_600, limit: 100) == 0)
        #expect(try await store.receipt(id: today.id)?.status == .acknowledged)
        #expect(try await store.deleteEndedReceipts(before: cutoff + day, limit: 100) == 1)
        #expect(try await store.receipt(id: today.id) == nil)
        #expect(try await Self.partitionCount(in: store) == 0)
        #expect(store.receiptRowDeletions.total == 2)
        try await store.close()
    }

    /// One instance drops a day while another still knows its partition: the second one's receipt of that day is written
    /// all the same (its partition made again), with no error.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aReceiptOfADayAnotherInstanceDroppedIsWritten() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresTestDatabase.openStore(configuration)
        let second = try await PostgresTestDatabase.openStore(configuration)
        let device = Fixtures.device().device
        try await first.insertDevice(device)
        let ended = Self.receipt(for: device, at: start + 60)
        #expect(try await first.insertReceipt(ended, maximumActivePerDevice: 25))
        _ = try await first.endReceipt(id: ended.id, .expired, at: start + 3_660)
        #expect(try await second.deleteEndedReceipts(before: start + 2 * day, limit: 100) == 1)
        #expect(try await first.partitionedDays(of: "notification_receipt") == [])

        // The first instance made the day's partition before; it does not know that it is gone.
        #expect(first.receiptPartitionDays.withLock { $0.contains(startDay) })
        let late = Self.receipt(for: device, at: start + 120)
        #expect(try await first.insertReceipt(late, maximumActivePerDevice: 25))
        #expect(try await second.receipt(id: late.id) == late)
        #expect(try await first.partitionedDays(of: "notification_receipt") == [startDay])
        // And the instance that dropped it writes to it too.
        let another = Self.receipt(for: device, at: start + 180)
        #expect(try await second.insertReceipt(another, maximumActivePerDevice: 25))
        #expect(try await first.activeReceipts(tokenID: another.tokenID) == [another])
        try await first.close()
        try await second.close()
    }

    /// Ten days of a steady load (25 receipts every six hours, active during the pass, acknowledged an hour later) with
    /// a retention of one day, and one receipt of day 0 left active (its instance down): the receipts' partitions (the
    /// retention's day, today and day 0), rows and bytes stop growing once the first days went. Only day 0's ended
    /// receipts are deleted as rows (the active one holds their day); every other day goes whole.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aSteadyLoadWithAShortRetentionKeepsTheReceiptsWithinABound() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let clock = TestClock(start)
        let sweeper = RetentionSweeper(store: store, policy: RetentionPolicy(retention: day, batchSize: 500), clock: clock)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let held = Self.receipt(for: device, at: start)
        #expect(try await store.insertReceipt(held, maximumActivePerDevice: 1_000))
        var partitions: [Int] = []
        var rows: [Int] = []
        var bytes: [Int] = []
        for _ in 0..<40 {  // ten days, a round every six hours
            let now = clock.now()
            let fresh = (0..<25).map { _ in
                var receipt = Self.receipt(for: device, at: now)
                receipt.content = Data(repeating: 0x61, count: 500)
                return receipt
            }
            for receipt in fresh { #expect(try await store.insertReceipt(receipt, maximumActivePerDevice: 1_000)) }
            try await sweeper.sweep()
            for receipt in fresh {
                _ = try await store.endReceipt(id: receipt.id, .acknowledged(actionID: "pw_ack", byDevice: device.id), at: now + 3_600)
            }
            partitions.append(try await Self.partitionCount(in: store))
            rows.append(try await store.read("SELECT count(*) FROM notification_receipt").first?.decode(Int.self) ?? 0)
            bytes.append(
                try await store.read(
                    """
                    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = 'notification_receipt'::regclass
                    """
                ).first?.decode(Int.self) ?? 0)
            clock.advance(by: day / 4)
        }
        print("PostgreSQL receipts, steady load, retention 1 day: partitions \(partitions), rows \(rows), bytes \(bytes)")
        // The retention's day, today, and day 0 (the active receipt).
        #expect(partitions.max()! <= 3, "partitions per round: \(partitions)")
        #expect(partitions[12...].allSatisfy { $0 == 3 }, "partitions per round: \(partitions)")
        // At most two days of 100 receipts, and the active one.
        #expect(rows[12...].max()! <= 2 * 100 + 1, "rows per round: \(rows)")
        // A day's partition holds the dead versions of its ended receipts until autovacuum visits it, which varies from
        // run to run (a full run once measured 1.10× the settled size); without the drops the table would grow to ten
        // times it.
        let settled = bytes[8..<12].max()!
        #expect(bytes[12...].max()! <= settled + settled / 2, "bytes per round: \(bytes)")
        #expect(try await store.receipt(id: held.id) == held)
        #expect(store.receiptRowDeletions.total == 4 * 25)
        try await store.close()
    }
}
