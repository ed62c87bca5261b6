import Foundation

/// A notification that repeats until someone acknowledges it (`POST /notifications` with `acknowledge`; issue 39,
/// section 3): the receipt the sender reads, and what the repeats need (the content, the collapse id, the schedule).
///
/// A receipt is `active` while it repeats; it ends once, as `acknowledged` (an answer action was tapped), `expired`,
/// `canceled` (by its sender, or because its device can no longer be reached) or `replaced` (a newer acknowledged
/// send of the same token with the same `collapse_id`). Ended receipts are kept ``ReceiptRules/keptAfterEnd``.
public struct Receipt: Sendable, Equatable {
    public typealias ID = UUID

    public enum Status: String, Sendable, Equatable, CaseIterable {
        case active
        case acknowledged
        case expired
        case canceled
        case replaced

        public var isEnded: Bool { self != .active }
    }

    public var id: ID
    /// The notification the sender's request created; `nil` between the receipt's insertion and that notification's
    /// acceptance (``ReceiptStore/activateReceipt(id:notificationID:at:)``).
    public var notificationID: PushNotification.ID?
    public var deviceID: Device.ID
    /// The API token that sent it: only that token reads and cancels it.
    public var tokenID: UUID
    /// The collapse id every push of it carries (the sender's `collapse_id`, or one Herald derived).
    public var collapseID: String
    /// Whether the sender chose ``collapseID`` (only then does a newer send with it replace this one).
    public var collapseIDGiven: Bool
    /// The notification's `tags` (`POST /notifications/receipts/cancel {"tag"}`).
    public var tags: [String]
    /// The notification's content (``NotificationContent/json``), as each repeat sends it.
    public var content: Data
    public var repeatSeconds: Int
    public var expiresAt: Date
    /// When the next repeat goes out; at ``expiresAt`` once no repeat is left (then it is claimed to expire).
    public var nextRepeatAt: Date
    public var repeatsSent: Int
    public var status: Status
    /// The action that acknowledged it.
    public var actionID: String?
    /// The device whose app reported the acknowledging tap.
    public var acknowledgedByDevice: Device.ID?
    /// Why it was canceled: `canceled_by_sender`, `canceled_by_tag`, `device_inactive`, `device_removed`, `not_sent`.
    public var cancelReason: String?
    public var createdAt: Date
    public var endedAt: Date?

    public init(
        id: ID = UUID(), notificationID: PushNotification.ID? = nil, deviceID: Device.ID, tokenID: UUID, collapseID: String,
        collapseIDGiven: Bool, tags: [String] = [], content: Data, repeatSeconds: Int, expiresAt: Date, nextRepeatAt: Date,
        repeatsSent: Int = 0, status: Status = .active, actionID: String? = nil, acknowledgedByDevice: Device.ID? = nil,
        cancelReason: String? = nil, createdAt: Date, endedAt: Date? = nil
    ) {
        self.id = id
        self.notificationID = notificationID
        self.deviceID = deviceID
        self.tokenID = tokenID
        self.collapseID = collapseID
        self.collapseIDGiven = collapseIDGiven
        self.tags = tags
        self.content = content
        self.repeatSeconds = repeatSeconds
        self.expiresAt = expiresAt
        self.nextRepeatAt = nextRepeatAt
        self.repeatsSent = repeatsSent
        self.status = status
        self.actionID = actionID
        self.acknowledgedByDevice = acknowledgedByDevice
        self.cancelReason = cancelReason
        self.createdAt = createdAt
        self.endedAt = endedAt
    }
}

/// How a receipt ends (``ReceiptStore/endReceipt(id:_:at:)``).
public enum ReceiptEnding: Sendable, Equatable {
    case acknowledged(actionID: String, byDevice: Device.ID)
    case expired
    case canceled(reason: String)

    public var status: Receipt.Status {
        switch self {
        case .acknowledged: .acknowledged
        case .expired: .expired
        case .canceled: .canceled
        }
    }
}

/// Told once when a receipt becomes `acknowledged` or `expired` (not `canceled` or `replaced`), by the instance whose
/// store transition ended it, after that transition committed (the signed callbacks hang here). The default does
/// nothing.
public protocol ReceiptEndedObserver: Sendable {
    func receiptEnded(_ receipt: Receipt, tokenID: APIToken.ID) async
}

/// The observer that does nothing.
public struct NoReceiptEndedObserver: ReceiptEndedObserver {
    public init() {}
    public func receiptEnded(_ receipt: Receipt, tokenID: APIToken.ID) async {}
}

/// Receipts, their repeats claimed when due with a lease (as the scheduled sends' are), so that with several instances
/// each repeat goes out once and after a crash another instance takes them once the lease expires.
public protocol ReceiptStore: Sendable {
    /// Stores `receipt` unless its device already has `maximumActivePerDevice` active receipts, not counting those this
    /// one will replace (same token, same sender-given collapse id); checked in the same transaction. Returns whether it
    /// was stored.
    func insertReceipt(_ receipt: Receipt, maximumActivePerDevice: Int) async throws -> Bool
    /// The receipt's notification was accepted: records its id and ends the token's other active receipts with the same
    /// sender-given collapse id as `replaced` (one transaction). Returns the replaced receipts.
    func activateReceipt(id: Receipt.ID, notificationID: PushNotification.ID, at date: Date) async throws -> [Receipt]
    /// Deletes a receipt whose notification was not accepted.
    func deleteReceipt(id: Receipt.ID) async throws
    func receipt(id: Receipt.ID) async throws -> Receipt?
    /// Those of `ids` that exist.
    func receipts(ids: [Receipt.ID]) async throws -> [Receipt.ID: Receipt]
    /// The token's active receipts.
    func activeReceipts(tokenID: UUID) async throws -> [Receipt]
    /// Ends an active receipt; returns it as ended, or `nil` when it was not active (ended before, or none).
    func endReceipt(id: Receipt.ID, _ ending: ReceiptEnding, at date: Date) async throws -> Receipt?
    /// Claims up to `limit` active receipts whose ``Receipt/nextRepeatAt`` is due at `now` and that nobody holds (or
    /// whose lease expired), earliest first; one whose notification was never accepted only once it is
    /// ``ReceiptRules/unsentGrace`` old (its request failed or its instance crashed: the dispatcher cancels it).
    func claimDueReceipts(at now: Date, lease: Lease, limit: Int) async throws -> [Receipt]
    /// Saves a repeat (``Receipt/repeatsSent``, ``Receipt/nextRepeatAt``) where `owner` still holds the lease and the
    /// receipt is still active, and releases the lease; returns whether it was saved.
    @discardableResult
    func completeReceiptRepeat(_ receipt: Receipt, owner: String) async throws -> Bool
    /// Deletes at most `limit` receipts that ended before `cutoff`; returns how many. Never an active one. A backend may
    /// keep one up to about a day longer to delete it with its day's receipts at once, more than `limit` then (PostgreSQL).
    func deleteEndedReceipts(before cutoff: Date, limit: Int) async throws -> Int
}
