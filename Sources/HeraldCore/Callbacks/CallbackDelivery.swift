import Foundation

/// What a callback tells its receiver (the `type` of its body).
public enum CallbackEvent: String, Sendable, Equatable, CaseIterable {
    /// A notification sent with `acknowledge` was acknowledged (its receipt is the data).
    case acknowledged = "notification.acknowledged"
    /// A notification sent with `acknowledge` expired unacknowledged, or any notification expired undelivered.
    case expired = "notification.expired"
    /// A notification reached the device (the token's delivery outcomes).
    case delivered = "notification.delivered"
    /// A notification failed for good, with its reason (a dead token, refused by the provider).
    case failed = "notification.failed"
    /// The person answered a notification (an action without a url).
    case answered = "notification.answered"
}

/// One callback in the outbox: a signed POST to `url`, tried until it is delivered, the receiver answers 410, or the
/// retries (``CallbackRetryPolicy``) run out. Its body is fixed when it is enqueued; each attempt signs it afresh
/// (``CallbackSigning``) with the secret of the token that sent the notification.
public struct CallbackDelivery: Sendable, Equatable, Identifiable {
    public typealias ID = UUID

    public enum Status: String, Sendable, Equatable, CaseIterable {
        /// Waiting for ``CallbackDelivery/nextAttemptAt``.
        case pending
        /// A 2xx answered it.
        case delivered
        /// The receiver answered 410: no more attempts.
        case gone
        /// Given up (egress refused, or every attempt failed; ``CallbackDelivery/lastError`` says why).
        case failed
    }

    public var id: ID
    /// The device the notification went to (its callbacks go with it when it is deleted).
    public var deviceID: Device.ID
    /// The API token whose secret signs it.
    public var tokenID: UUID
    public var url: String
    public var event: CallbackEvent
    /// The JSON body, `{"type", "timestamp", "data"}`.
    public var body: Data
    /// Attempts made so far (a busy host's postponements are not attempts).
    public var attempts: Int
    /// When it is tried next; `nil` once it is finished.
    public var nextAttemptAt: Date?
    public var status: Status
    public var lastError: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: ID = UUID(), deviceID: Device.ID, tokenID: UUID, url: String, event: CallbackEvent, body: Data, attempts: Int = 0,
        nextAttemptAt: Date?, status: Status = .pending, lastError: String? = nil, createdAt: Date, updatedAt: Date? = nil
    ) {
        self.id = id
        self.deviceID = deviceID
        self.tokenID = tokenID
        self.url = url
        self.event = event
        self.body = body
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.status = status
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    /// A callback due now, its body `{"type": event, "timestamp": now (RFC 3339), "data": data}`.
    public static func make(
        event: CallbackEvent, data: JSONObject, url: String, deviceID: Device.ID, tokenID: UUID, now: Date
    ) throws -> CallbackDelivery {
        let body: JSONValue = ["type": .string(event.rawValue), "timestamp": .string(now.iso8601WithMilliseconds), "data": .object(data)]
        return CallbackDelivery(
            deviceID: deviceID, tokenID: tokenID, url: url, event: event, body: try body.encoded(), nextAttemptAt: now, createdAt: now)
    }

    /// The `webhook-id` of every attempt: `msg_` and the id's 32 hex digits.
    public var webhookID: String { "msg_" + id.lowercasedText.replacingOccurrences(of: "-", with: "") }

    /// The callback after an attempt's ``CallbackStep``, at `now`.
    public func applying(_ step: CallbackStep, now: Date) -> CallbackDelivery {
        var next = self
        next.updatedAt = now
        switch step {
        case .delivered:
            next.attempts += 1
            next.status = .delivered
            next.nextAttemptAt = nil
            next.lastError = nil
        case .gone:
            next.attempts += 1
            next.status = .gone
            next.nextAttemptAt = nil
            next.lastError = "the receiver answered 410"
        case .failed(let reason):
            next.attempts += 1
            next.status = .failed
            next.nextAttemptAt = nil
            next.lastError = reason
        case .retry(let date, let countsAttempt):
            if countsAttempt { next.attempts += 1 }
            next.nextAttemptAt = date
        }
        return next
    }
}

/// The callback outbox and the tokens' callback settings. Callbacks are claimed when due with a lease (as scheduled
/// sends and the notification outbox are), so that with several instances each attempt is made once, and after a
/// crash another instance makes it once the lease expires: delivery is at least once.
public protocol CallbackStore: Sendable {
    /// Stores a new callback (pending, due at its ``CallbackDelivery/nextAttemptAt``).
    func enqueueCallback(_ callback: CallbackDelivery) async throws
    func callback(id: CallbackDelivery.ID) async throws -> CallbackDelivery?
    /// Claims up to `limit` pending callbacks due at `now` that nobody holds (or whose lease expired), earliest first.
    func claimDueCallbacks(at now: Date, lease: Lease, limit: Int) async throws -> [CallbackDelivery]
    /// Saves an attempt's result (status, attempts, next attempt, last error) where `owner` still holds the lease and
    /// the callback is pending, and releases the lease; returns whether it was saved.
    @discardableResult
    func completeCallbackAttempt(_ callback: CallbackDelivery, owner: String) async throws -> Bool
    /// Deletes up to `limit` finished callbacks (delivered, gone, failed) last changed before `date`; returns how many.
    func deleteFinishedCallbacks(before date: Date, limit: Int) async throws -> Int
    /// Sets (or, with `nil`, clears) the URL that gets the delivery outcomes of every notification `tokenID` sends.
    func setTokenCallbackURL(_ url: String?, tokenID: UUID, deviceID: Device.ID, at date: Date) async throws
    /// The token's outcome callback URL; `nil` when it has none.
    func tokenCallbackURL(tokenID: UUID) async throws -> String?
}
