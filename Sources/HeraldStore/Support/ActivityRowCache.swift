import Foundation
import HeraldCore
import Synchronization

/// Activity rows as the SQLite writer last read or wrote them (with their extras), so that a change of one activity
/// decides on its row without a visit to the writer first: the write that follows checks the row in the writer
/// anyway (``SQLiteStore``'s optimistic changes), so a row that is not current costs one more try, never a wrong write.
///
/// Only the writer's connection fills it, inside its serial work (read batches, write batches): entries follow the
/// order of the writes. Writes that do not go through the batches forget what they touch. Bounded: at most
/// ``capacityBytes`` of documents and extras, no row over ``largestRowBytes`` (a full `log` backlog is read each time).
///
/// ```swift
/// cache.remember(record)                                   // in the writer, after reading or writing it
/// let row = cache.record(deviceID: id, slug: "oven")       // a change's first try decides on it
/// ```
final class ActivityRowCache: Sendable {
    private struct Key: Hashable {
        var deviceID: Device.ID
        var slug: String
    }

    private struct State {
        var rows: [Key: ActivityRecord] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())
    let capacityBytes: Int
    let largestRowBytes: Int

    init(capacityBytes: Int = 16 << 20, largestRowBytes: Int = 64 << 10) {
        self.capacityBytes = capacityBytes
        self.largestRowBytes = largestRowBytes
    }

    /// The row last read or written, with its extras; `nil` when none is kept.
    func record(deviceID: Device.ID, slug: String) -> ActivityRecord? {
        state.withLock { $0.rows[Key(deviceID: deviceID, slug: slug)] }
    }

    /// Keeps `record` (read with its extras) as the row is now; a row read without its extras, or too large, is
    /// forgotten instead.
    func remember(_ record: ActivityRecord) {
        let key = Key(deviceID: record.deviceID, slug: record.slug)
        let size = Self.bytes(of: record)
        state.withLock { state in
            if let previous = state.rows.removeValue(forKey: key) { state.bytes -= Self.bytes(of: previous) }
            guard record.extrasRead, size <= largestRowBytes else { return }
            // Make room by dropping arbitrary rows; a miss only costs a read.
            while state.bytes + size > capacityBytes, let (victim, row) = state.rows.first {
                state.rows[victim] = nil
                state.bytes -= Self.bytes(of: row)
            }
            state.rows[key] = record
            state.bytes += size
        }
    }

    /// Gives a kept row the lease a claim wrote to its row (what else the row holds did not change).
    func leased(deviceID: Device.ID, slug: String, _ lease: Lease) {
        state.withLock { state in
            state.rows[Key(deviceID: deviceID, slug: slug)]?.lease = Lease(
                owner: lease.owner, expiresAt: Date(timeIntervalSince1970: lease.expiresAt.timeIntervalSince1970))
        }
    }

    /// Forgets one activity's row (it was deleted, or written without being read back).
    func forget(deviceID: Device.ID, slug: String) {
        state.withLock { state in
            if let previous = state.rows.removeValue(forKey: Key(deviceID: deviceID, slug: slug)) { state.bytes -= Self.bytes(of: previous) }
        }
    }

    /// Forgets every row (a write touched rows it does not name, or a write transaction failed).
    func forgetAll() {
        state.withLock { $0 = State() }
    }

    /// How many rows are kept (for tests).
    var count: Int { state.withLock { $0.rows.count } }

    /// The bytes a row holds: its document, extras and pending push, and a fixed share for the rest.
    private static func bytes(of record: ActivityRecord) -> Int {
        record.document.count + (record.extras?.count ?? 0) + (record.pendingPush?.count ?? 0) + 256
    }
}
