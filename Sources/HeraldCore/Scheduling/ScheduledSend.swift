import Foundation

/// A notification to send later (`POST /notifications/scheduled`): once at ``sendAt``, or on a ``Recurrence``.
/// The notification is kept as the `POST /notifications` body it was scheduled with, and parsed again when it goes out.
public struct ScheduledSend: Sendable, Equatable {
    public typealias ID = UUID

    public enum Status: String, Sendable, Equatable, CaseIterable {
        /// Waiting for ``ScheduledSend/nextAt``.
        case scheduled
        /// A one-time send that went out, or a recurrence that ended (its `until` or `count` reached).
        case sent
        /// A one-time send that could not go out (``ScheduledSend/lastError``: `quota_exceeded`, …).
        case failed
        /// Canceled by its sender.
        case canceled
    }

    /// A repeating send: a five-field cron expression in an IANA time zone, until a time or a number of sends.
    public struct Recurrence: Sendable, Equatable {
        public var cron: String
        public var timeZone: String
        public var until: Date?
        public var count: Int?

        public init(cron: String, timeZone: String, until: Date? = nil, count: Int? = nil) {
            self.cron = cron
            self.timeZone = timeZone
            self.until = until
            self.count = count
        }
    }

    public var id: ID
    public var deviceID: Device.ID
    /// The API token that scheduled it: only that token sees and cancels it.
    public var tokenID: UUID
    /// The `POST /notifications` body, as JSON.
    public var notification: Data
    public var sendAt: Date?
    public var recurrence: Recurrence?
    /// When it goes out next; `nil` once it is finished.
    public var nextAt: Date?
    public var status: Status
    /// Sends that went out (a repeating send's skipped sends are not counted).
    public var sentCount: Int
    /// Why the last send did not go out (`quota_exceeded`, `device_inactive`, …); `nil` after one that did.
    public var lastError: String?
    /// The notification the last send created.
    public var lastNotificationID: UUID?
    public var createdAt: Date
    public var updatedAt: Date
    public var canceledAt: Date?

    public init(
        id: ID = UUID(), deviceID: Device.ID, tokenID: UUID, notification: Data, sendAt: Date? = nil, recurrence: Recurrence? = nil,
        nextAt: Date?, status: Status = .scheduled, sentCount: Int = 0, lastError: String? = nil, lastNotificationID: UUID? = nil,
        createdAt: Date, updatedAt: Date? = nil, canceledAt: Date? = nil
    ) {
        self.id = id
        self.deviceID = deviceID
        self.tokenID = tokenID
        self.notification = notification
        self.sendAt = sendAt
        self.recurrence = recurrence
        self.nextAt = nextAt
        self.status = status
        self.sentCount = sentCount
        self.lastError = lastError
        self.lastNotificationID = lastNotificationID
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.canceledAt = canceledAt
    }
}

/// Scheduled sends, claimed when due with a lease (as the outbox is), so that with several instances each send goes
/// out once, and after a crash another instance takes it when the lease expires.
public protocol ScheduledSendStore: Sendable {
    /// Stores `send` unless its device already has `maximumPending` sends scheduled (checked in the same transaction);
    /// returns whether it was stored.
    func insertScheduledSend(_ send: ScheduledSend, maximumPending: Int) async throws -> Bool
    func scheduledSend(id: ScheduledSend.ID) async throws -> ScheduledSend?
    /// The sends a token scheduled, newest first, at most `limit`.
    func scheduledSends(tokenID: UUID, limit: Int) async throws -> [ScheduledSend]
    /// Cancels a send that is still scheduled (one being sent at that moment still goes out once, and stays canceled);
    /// returns it as it is now (a finished one unchanged), or `nil` when there is no such send.
    func cancelScheduledSend(id: ScheduledSend.ID, at date: Date) async throws -> ScheduledSend?
    /// Deletes a send for good (`?purge=true`).
    func deleteScheduledSend(id: ScheduledSend.ID) async throws
    /// Claims up to `limit` scheduled sends due at `now` that nobody holds (or whose lease expired), earliest first.
    func claimDueScheduledSends(at now: Date, lease: Lease, limit: Int) async throws -> [ScheduledSend]
    /// Saves what sending did (status, next time, counts) where `owner` still holds the lease and the send is still
    /// scheduled (a send canceled meanwhile stays canceled), and releases the lease; returns whether it was saved.
    @discardableResult
    func completeScheduledSend(_ send: ScheduledSend, owner: String) async throws -> Bool
}
