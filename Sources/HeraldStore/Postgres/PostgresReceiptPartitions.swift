import Foundation
import HeraldCore
import PostgresNIO
import Synchronization

/// Receipts by day (issue 40, section 4; migration 22): `notification_receipt` is partitioned by the UTC day a receipt
/// was created on (`created_at`, the day numbering of ``partitionDay(of:)``), one partition per day
/// (`notification_receipt_d20421`), so that retention drops a day whole (`DROP TABLE`: no deleted rows, no vacuum
/// debt) instead of deleting its receipts one by one.
///
/// The rule (docs/operations.md, "Retention"): a pass drops a day when the day ended before the cutoff and every receipt
/// of it has ended (status not `active`) before the cutoff, that is when the old rule would delete each of its rows;
/// checked before and again under the table's lock. An active receipt is never dropped, whatever its age: receipts end
/// at most ``ReceiptRules/expireSeconds``' upper bound (plus ``ReceiptRules/unsentGrace`` for one never sent) after
/// their creation, but only an instance that runs ends them, so the rule looks at the status, never at the time alone.
/// A day that holds an active receipt (today's, or an old one whose instance was down) keeps its partition; its ended
/// receipts past the cutoff are deleted as rows, a batch at a time, as before. A day without an active receipt whose
/// ended ones are past the cutoff waits to go whole instead (once it ended and the cutoff passed its last end), so an
/// ended receipt is kept at least as long as the rule says and at most about a day longer.
///
/// The number of partitions stays bounded: an ended receipt is kept at most ``ReceiptRules/keptAfterEnd`` (or the
/// retention when shorter) and ends within hours of its creation, so the table holds about min(retention, 7 days) plus
/// a day or two of partitions. That bound matters for the statements that find a receipt by its id alone (reading,
/// ending or activating one: the store's protocol gives no creation time there): each looks into every partition's
/// primary key index, a few more index probes than on one table. Where the receipt itself is given (a repeat saved,
/// ``completeReceiptRepeat(_:owner:)``) or read in the statement (claims), its creation time narrows the statement to
/// its day's partition.
///
/// Partitions are made on demand: before inserting a receipt of a day this store has not seen yet, one statement makes
/// the day's partition if it is missing (`herald_receipt_partitions`, under the advisory lock of the notifications'
/// partitions; `ATTACH PARTITION`, which does not stop reads and writes of the other days). A receipt is never refused
/// for want of a partition: should another instance have dropped its day meanwhile (only a day past the retention can
/// go), the insert runs again with the partition made in its own transaction, where no drop can come in between.
extension PostgresStore {
    /// The name of the partition of receipts that holds `day`, quoted.
    static func receiptPartition(day: Int) -> String { "\"notification_receipt_d\(day)\"" }

    /// Makes the partition of `day` unless this store made or saw it already (then no statement at all).
    func ensureReceiptPartition(day: Int) async throws {
        guard !receiptPartitionDays.withLock({ $0.contains(day) }) else { return }
        // In a transaction of its own: one that PostgreSQL aborts for a deadlock (attaching waits for locks) runs again.
        try await transaction { connection in try await self.makeReceiptPartition(day: day, on: connection) }
        receiptPartitionKnown(day: day)
    }

    /// Makes the partition of `day` if it is missing, in the caller's transaction: once this returns, no other instance
    /// can drop it before the transaction ends. The table is locked first (in the mode an insert takes; a drop needs
    /// it exclusively), so that a day found there is not dropped between the look and the caller's insert.
    func makeReceiptPartition(day: Int, on connection: PostgresConnection) async throws {
        try await execute("LOCK TABLE ONLY notification_receipt IN ROW EXCLUSIVE MODE", on: connection)
        try await execute("SELECT herald_receipt_partitions(\([day])::integer[])", on: connection)
    }

    /// Remembers that `day`'s partition exists (made, or written to), once the transaction that made it committed.
    func receiptPartitionKnown(day: Int) {
        receiptPartitionDays.withLock { _ = $0.insert(day) }
    }

    /// What a pass found in the receipts' days: how many receipts went with their day, the days that hold an active
    /// receipt (their ended ones go as rows), and whether a drop found the table busy (then nothing more this pass).
    struct ReceiptDays {
        var dropped = 0
        var active: [Int] = []
        var busy = false
    }

    /// Drops the days that ended before `cutoff` and whose receipts all ended before it; stops at the first day whose
    /// table could not be locked within a second (busy: the next pass tries again).
    func dropEndedReceiptDays(before cutoff: Double) async throws -> ReceiptDays {
        var days = ReceiptDays()
        for day in try await partitionedDays(of: "notification_receipt") {
            let partition = Self.receiptPartition(day: day)
            // Through the partial indexes of active receipts and of ended ones' ends: no scan.
            let facts: PostgresQuery = """
                SELECT EXISTS (SELECT 1 FROM \(unescaped: partition) WHERE status = 'active'),
                    EXISTS (SELECT 1 FROM \(unescaped: partition) WHERE status != 'active' AND (ended_at IS NULL OR ended_at >= \(cutoff)))
                """
            let found: (active: Bool, recent: Bool)
            do {
                guard let row = try await read(facts).first else { continue }
                found = try row.decode((Bool, Bool).self)
            } catch let error as PostgresStoreError where error.sqlState == "42P01" {
                continue  // another instance dropped the day meanwhile
            }
            if found.active { days.active.append(day) }
            guard !found.active, !found.recent, Double(day + 1) * 86_400 <= cutoff else { continue }
            switch try await dropReceiptPartition(day: day, keptIf: facts) {
            case .kept: continue
            case .dropped(let count):
                receiptPartitionDays.withLock { _ = $0.remove(day) }
                days.dropped += count
            case .busy:
                logger.info("A day's receipts were not dropped: their table was busy; the next pass tries again", metadata: ["day": "\(day)"])
                days.busy = true
                return days
            }
        }
        return days
    }

    private enum ReceiptPartitionDrop { case dropped(Int), kept, busy }

    /// Drops the partition of `day` unless `facts` (whether it holds an active receipt, and one not ended before the
    /// cutoff) says otherwise under the table's lock, when nothing can change the partition any more.
    private func dropReceiptPartition(day: Int, keptIf facts: PostgresQuery) async throws -> ReceiptPartitionDrop {
        let partition = Self.receiptPartition(day: day)
        do {
            // Counted before the lock (a figure for the pass: the day takes no new receipts, it ended before the cutoff).
            let count = try await read("SELECT count(*) FROM \(unescaped: partition)").first?.decode(Int.self) ?? 0
            return try await transaction { connection -> ReceiptPartitionDrop in
                try await self.execute("SET LOCAL lock_timeout = '1s'", on: connection)
                // The parent first, as every statement on receipts locks it: no deadlock with the hot path.
                try await self.execute("LOCK TABLE notification_receipt IN ACCESS EXCLUSIVE MODE", on: connection)
                guard let row = try await self.execute(facts, on: connection).first, try row.decode((Bool, Bool).self) == (false, false) else {
                    return .kept
                }
                try await self.execute("DROP TABLE \(unescaped: partition)", on: connection)
                return .dropped(count)
            }
        } catch let error as PostgresStoreError where error.sqlState == "55P03" {
            return .busy  // the lock was not had within lock_timeout: rolled back
        } catch let error as PostgresStoreError where error.sqlState == "42P01" {
            return .kept  // another instance dropped the day meanwhile
        }
    }

    /// Deletes up to `limit` receipts of `days` (days that hold an active receipt, so cannot go whole yet) that ended
    /// before `cutoff`, one statement per day that locks only the rows it deletes (`FOR UPDATE SKIP LOCKED`), so that
    /// instances sweeping together never wait for each other.
    func deleteEndedReceiptRows(ofDays days: [Int], before cutoff: Double, limit: Int) async throws -> Int {
        var deleted = 0
        for day in days where deleted < limit {
            let (low, high) = (Double(day) * 86_400, Double(day + 1) * 86_400)
            deleted += try await write(
                """
                DELETE FROM notification_receipt WHERE created_at >= \(low) AND created_at < \(high) AND (id, created_at) IN (
                    SELECT id, created_at FROM notification_receipt
                    WHERE created_at >= \(low) AND created_at < \(high) AND status != 'active' AND ended_at < \(cutoff)
                    LIMIT \(limit - deleted) FOR UPDATE SKIP LOCKED)
                RETURNING id
                """
            ).count
        }
        receiptRowDeletions.count(deleted)
        return deleted
    }
}
