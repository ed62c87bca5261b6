import Foundation

/// The rules of repeats until acknowledged (docs/api.md, "Receipts"), pure: facts in, a step out.
///
/// ```swift
/// switch ReceiptRules.step(for: receipt, at: clock.now()) {
/// case .expire: end it as expired
/// case .repeatNow: send a repeat, then save ReceiptRules.afterRepeat(receipt, sentAt: now)
/// case .wait(let until): nothing before `until`
/// }
/// ```
public enum ReceiptRules {
    public static let repeatSeconds = 30...3_600
    public static let defaultRepeatSeconds = 60
    public static let expireSeconds = 60...10_800
    public static let defaultExpireSeconds = 3_600
    /// Repeats after the first push, at most.
    public static let maximumRepeats = 50
    /// Receipts repeating at once per device.
    public static let maximumActivePerDevice = 25
    /// How long an ended receipt can still be read.
    public static let keptAfterEnd: TimeInterval = 7 * 86_400
    /// How long a receipt whose notification was not (yet) accepted is left alone by the repeats: longer than any
    /// `POST /notifications` takes.
    public static let unsentGrace: TimeInterval = 300
    /// The action Herald adds when the notification has no answer action.
    public static let acknowledgeActionID = "pw_ack"
    public static let acknowledgeActionTitle = "Acknowledge"

    /// What is due for an active receipt at `now`.
    public enum Step: Equatable, Sendable {
        case expire
        case repeatNow
        case wait(until: Date)
    }

    /// The first receipt of a send accepted at `now`: the first repeat `repeatSeconds` later (or the expiry, when that
    /// comes first).
    public static func firstRepeat(createdAt now: Date, repeatSeconds: Int, expireSeconds: Int) -> (next: Date, expiresAt: Date) {
        let expiresAt = now.addingTimeInterval(TimeInterval(expireSeconds))
        return (min(now.addingTimeInterval(TimeInterval(repeatSeconds)), expiresAt), expiresAt)
    }

    public static func step(for receipt: Receipt, at now: Date) -> Step {
        if now >= receipt.expiresAt { return .expire }
        guard receipt.repeatsSent < maximumRepeats else { return .wait(until: receipt.expiresAt) }
        return now >= receipt.nextRepeatAt ? .repeatNow : .wait(until: receipt.nextRepeatAt)
    }

    /// The receipt after a repeat went out at `sentAt`: one more sent; the next one `repeatSeconds` after this one (not
    /// a burst to catch up after a pause), or the expiry once the cap is reached or the next would fall after it.
    public static func afterRepeat(_ receipt: Receipt, sentAt: Date) -> Receipt {
        var updated = receipt
        updated.repeatsSent += 1
        let next = sentAt.addingTimeInterval(TimeInterval(receipt.repeatSeconds))
        updated.nextRepeatAt = updated.repeatsSent >= maximumRepeats ? receipt.expiresAt : min(next, receipt.expiresAt)
        return updated
    }

    /// The receipt after a repeat that could not go out now (the device's backlog full): skipped, tried at the next time.
    public static func afterSkippedRepeat(_ receipt: Receipt, at now: Date) -> Receipt {
        var updated = receipt
        updated.nextRepeatAt = min(now.addingTimeInterval(TimeInterval(receipt.repeatSeconds)), receipt.expiresAt)
        return updated
    }

    /// Whether a newer acknowledged send replaces `older`'s repeats: the same token and the same collapse id, chosen by
    /// the sender in both, and `older` still active.
    public static func replaces(_ newer: Receipt, _ older: Receipt) -> Bool {
        newer.id != older.id && older.status == .active && newer.tokenID == older.tokenID && newer.collapseIDGiven && older.collapseIDGiven
            && newer.collapseID == older.collapseID
    }

    /// The collapse id of a send without one: derived from its receipt's id (the notification's id is made only when it
    /// is accepted), at most 64 bytes as APNs allows.
    public static func derivedCollapseID(receiptID: Receipt.ID) -> String {
        "pw-ack-" + receiptID.uuidString.lowercased()
    }

    /// Ended receipts that ended before this are deleted at `now`: after ``keptAfterEnd``, or after the retention when
    /// that is shorter.
    public static func deletionCutoff(at now: Date, retention: TimeInterval) -> Date {
        now.addingTimeInterval(-min(keptAfterEnd, retention))
    }
}
