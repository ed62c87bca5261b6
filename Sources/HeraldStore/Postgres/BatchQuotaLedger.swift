import Foundation
import HeraldCore

/// The quota counters a batch touches, read once (locked) and written back once: the accepts of a batch are decided
/// here, in order, as the statements of one accept at a time decided them, so that a batch of any size costs the same
/// statements. Pure: the store reads the rows, this decides, the store writes ``changed``.
///
/// ```swift
/// var ledger = BatchQuotaLedger(counters: locked, pending: pendingByDevice)
/// let decisions = batch.accepts.map { ledger.decide($0) }  // .accepted(…), .quotaExceeded(…), …
/// ledger.release(CounterKey(deviceID: id, day: day))        // a failed notification gives its quota back
/// write(ledger.changed)
/// ```
struct BatchQuotaLedger {
    struct Key: Hashable, Comparable {
        var deviceID: Device.ID
        var day: String

        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.deviceID.uuidString, lhs.day) < (rhs.deviceID.uuidString, rhs.day)
        }
    }

    /// One row of `quota_counter`.
    struct Row: Equatable {
        var attempts = 0
        var successful = 0
        var errors = 0
        var total = 0
        var exempt = 0
        var limitAnnounced = false

        var counters: QuotaCounters { QuotaCounters(attempts: attempts, successful: successful, errors: errors, total: total) }
    }

    private(set) var counters: [Key: Row]
    /// Each device's pending notifications when the batch began (at most the largest `pendingMaximum` asked), plus
    /// those this batch accepted.
    private var pending: [Device.ID: Int]
    /// The counters to write back.
    private(set) var changed: Set<Key> = []

    init(counters: [Key: Row], pending: [Device.ID: Int]) {
        self.counters = counters
        self.pending = pending
    }

    /// Counts the attempt and, if there is room, the notification: what the accept's own statements decided when
    /// each accept had its own (the attempt first; then the backlog, the exempt cap, the daily maximum).
    mutating func decide(_ request: AcceptRequest) -> AcceptDecision {
        let key = Key(deviceID: request.notification.deviceID, day: request.quota.day)
        let quota = request.quota
        var row = counters[key] ?? Row()
        defer {
            counters[key] = row
            changed.insert(key)
        }
        let wasAnnounced = row.limitAnnounced
        if quota.countsAttempt { row.attempts += 1 }
        if let pendingMaximum = quota.pendingMaximum, pending[key.deviceID, default: 0] >= pendingMaximum {
            return .backlogFull(row.counters)
        }
        if quota.maximum == nil, let exemptMaximum = quota.exemptMaximum {
            guard row.exempt < exemptMaximum else { return .exemptQuotaExceeded(row.counters) }
            row.exempt += 1
        }
        var usedUpQuota = false
        if let maximum = quota.maximum {
            guard row.successful < maximum else { return .quotaExceeded(row.counters) }
            row.successful += 1
            row.total += 1
            row.limitAnnounced = row.limitAnnounced || row.successful >= maximum
            usedUpQuota = !wasAnnounced && row.limitAnnounced
        }
        if request.notification.status == .pending { pending[key.deviceID, default: 0] += 1 }
        return .accepted(row.counters, usedUpQuota: usedUpQuota)
    }

    /// A notification counted on `key` failed or expired: its quota moves from `successful` to `errors`. Nothing for
    /// a counter that is not there.
    mutating func release(_ key: Key) {
        guard var row = counters[key] else { return }
        row.successful = max(row.successful - 1, 0)
        row.errors += 1
        counters[key] = row
        changed.insert(key)
    }
}
