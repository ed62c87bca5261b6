import Foundation

/// Devices and their credentials.
///
/// A push token may be bound to several devices (USER_IDs), each created by its own registration: inserting or
/// updating one device never changes another. Tokens are stored as given (the server normalises them first: APNs
/// tokens are lowercase hex). When the provider says a token is dead, every device of the platform bound to it is
/// deactivated.
public protocol DeviceStore: Sendable {
    /// Inserts a new device.
    func insertDevice(_ device: Device) async throws
    /// Replaces a stored device (matched by id).
    func updateDevice(_ device: Device) async throws
    /// The device whose USER_ID hashes to `userIDHash`.
    func device(userIDHash: String) async throws -> Device?
    /// The device with this id.
    func device(id: Device.ID) async throws -> Device?
    /// Removes a device together with its notifications and counters.
    func deleteDevice(id: Device.ID) async throws
    /// The provider said `token`, used for device `id`, is dead: marks inactive every device of that device's platform
    /// still bound to `token` (not `id` itself if it changed token since).
    func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws
    /// How many devices there are (active or not); cheap, for the `HERALD_MAX_DEVICES` check on every registration.
    func deviceCount() async throws -> Int
    /// The tokens of the active devices of `platform`, by device (at start-up: Web Push endpoints today's rules refuse
    /// are deactivated).
    func activeTokens(platform: Platform) async throws -> [Device.ID: String]
}

/// The daily counters of one device, as the rate-limit answers report them.
public struct QuotaCounters: Sendable, Equatable {
    /// Every send request that passed validation, including those refused for the limit.
    public var attempts: Int
    /// Notifications accepted and not failed; these consume the quota.
    public var successful: Int
    /// Notifications accepted that then failed for good (dead token, refused by the provider).
    public var errors: Int
    /// Notifications accepted (`successful + errors`).
    public var total: Int

    public init(attempts: Int = 0, successful: Int = 0, errors: Int = 0, total: Int = 0) {
        self.attempts = attempts
        self.successful = successful
        self.errors = errors
        self.total = total
    }

    /// A notification counted here failed for good (``DeliveryOutcome/releasesQuota``): its place moves from
    /// `successful` to `errors`, as every store saves it.
    public mutating func release() {
        successful = Swift.max(0, successful - 1)
        errors += 1
    }
}

/// The quota a notification is accepted under.
public struct QuotaRequest: Sendable, Equatable {
    /// The UTC day (`yyyy-MM-dd`) of the counters.
    public var day: String
    /// The device's daily maximum; `nil` when the notification is exempt (it is counted as an attempt only).
    public var maximum: Int?
    /// Whether the request counts as an attempt (not for notifications Herald itself sends).
    public var countsAttempt: Bool
    /// For a notification exempt from the daily maximum (`maximum == nil`: critical alerts, commands): the separate
    /// daily cap on such notifications; `nil` for none.
    public var exemptMaximum: Int?
    /// The most notifications the device may have pending (accepted, not yet delivered, failed or expired); `nil` for
    /// no bound.
    public var pendingMaximum: Int?

    public init(day: String, maximum: Int?, countsAttempt: Bool = true, exemptMaximum: Int? = nil, pendingMaximum: Int? = nil) {
        self.day = day
        self.maximum = maximum
        self.countsAttempt = countsAttempt
        self.exemptMaximum = exemptMaximum
        self.pendingMaximum = pendingMaximum
    }
}

/// What the store decided when asked to accept a notification.
public enum AcceptDecision: Sendable, Equatable {
    /// Stored durably; the counters after the notification was counted. `usedUpQuota` is true for the one notification
    /// of the day that used up the device's quota (the "quota used up" notice is due), at most once per device and day.
    case accepted(QuotaCounters, usedUpQuota: Bool)
    /// Not stored: the day's quota is used up; the counters after the refused attempt was counted.
    case quotaExceeded(QuotaCounters)
    /// Not stored: an exempt notification, and the day's cap on exempt notifications is used up.
    case exemptQuotaExceeded(QuotaCounters)
    /// Not stored: the device already has ``QuotaRequest/pendingMaximum`` notifications pending.
    case backlogFull(QuotaCounters)
}

/// Who may deliver a notification, and until when. An instance's delivery engine claims notifications by writing its lease into the
/// store; the store alone decides who delivers what. A lease whose owner died expires and is taken over.
public struct Lease: Sendable, Equatable {
    /// The instance that holds it (``DeliveryEngine/instanceID``).
    public var owner: String
    public var expiresAt: Date

    public init(owner: String, expiresAt: Date) {
        self.owner = owner
        self.expiresAt = expiresAt
    }
}

/// One notification to accept: counted against the quota and stored, optionally already leased to the instance that
/// is about to deliver it.
public struct AcceptRequest: Sendable, Equatable {
    public var notification: PushNotification
    public var quota: QuotaRequest
    /// When set, the notification is stored claimed by this lease (fresh notifications go straight to delivery).
    public var lease: Lease?

    public init(notification: PushNotification, quota: QuotaRequest, lease: Lease? = nil) {
        self.notification = notification
        self.quota = quota
        self.lease = lease
    }
}

/// The result of one delivery attempt, to be saved: the notification's new state and what goes with it.
public struct DeliveryOutcome: Sendable, Equatable {
    /// The notification as the attempt left it (status, attempts, last error, provider id, next attempt).
    public var notification: PushNotification
    /// The notification failed or expired: its quota moves from `successful` to `errors`.
    public var releasesQuota: Bool
    /// The provider said this token is dead: every device of the platform bound to it is deactivated (the
    /// notification's own device only if it still has it).
    public var deadToken: String?
    /// Nothing could deliver it (no provider, no connected client): it waits, due again at its expiry, until a client
    /// connects, the device registers again or an instance with a provider for its platform starts.
    public var isParked: Bool

    public init(notification: PushNotification, releasesQuota: Bool = false, deadToken: String? = nil, isParked: Bool = false) {
        self.notification = notification
        self.releasesQuota = releasesQuota
        self.deadToken = deadToken
        self.isParked = isParked
    }
}

/// Everything one group commit writes, in one transaction.
public struct WriteBatch: Sendable, Equatable {
    /// Accepted in order (the quota of a device is checked against the accepts before it in the batch).
    public var accepts: [AcceptRequest]
    /// Saved only where `owner` still holds the notification's lease; each releases the lease.
    public var outcomes: [DeliveryOutcome]
    /// The instance whose outcomes these are.
    public var owner: String
    /// Passed by the store as the last thing before the commit (``CommitGate``): when it throws, nothing of the batch
    /// is written.
    public var gate: CommitGate?

    public init(accepts: [AcceptRequest] = [], outcomes: [DeliveryOutcome] = [], owner: String, gate: CommitGate? = nil) {
        self.accepts = accepts
        self.outcomes = outcomes
        self.owner = owner
        self.gate = gate
    }
}

/// A pending notification nobody holds, and when its next attempt is due: what the scheduler's timer queue holds.
public struct ScheduledAttempt: Sendable, Equatable {
    public var id: PushNotification.ID
    public var dueAt: Date
    /// Its device: due attempts are claimed in turn per device (``FairReadyQueue``).
    public var deviceID: Device.ID

    public init(id: PushNotification.ID, dueAt: Date, deviceID: Device.ID) {
        self.id = id
        self.dueAt = dueAt
        self.deviceID = deviceID
    }
}

/// Accepted notifications and their delivery state: Herald's durable outbox.
///
/// Writes come in batches (``commit(_:)``: one transaction and one fsync for everything that arrived while the
/// previous batch was written); delivery is claimed with leases (``claim(_:lease:at:)``), so that several workers,
/// in one process or several, never deliver the same notification at the same time.
public protocol NotificationStore: Sendable {
    /// In one transaction: accepts every request in order (counts the attempt, checks the quota when
    /// `quota.maximum` is set, and if there is room stores the notification and counts it as successful), and saves
    /// every outcome whose lease `batch.owner` still holds (releasing the lease; a failed or expired outcome gives its
    /// quota back; a dead token deactivates the devices bound to it). Returns one decision per accept, in order.
    /// Passes `batch.gate` after every statement and before the commit; when passing throws, throws that error and
    /// writes nothing.
    func commit(_ batch: WriteBatch) async throws -> [AcceptDecision]
    /// How many ``commit(_:)`` calls the store takes at once to its advantage (PostgreSQL: each on a connection of its
    /// own, the batches' counters locked where they meet); the group commit keeps that many batches in flight. 1 (the
    /// default): one at a time (SQLite has one writer).
    var concurrentBatches: Int { get }
    /// Claims the given notifications that are pending, due at `now` and held by nobody (or by an expired lease);
    /// returns those it claimed.
    func claim(_ ids: [PushNotification.ID], lease: Lease, at now: Date) async throws -> [PushNotification]
    /// Claims the pending notifications of one device that nobody holds, due or not (a client of it just connected,
    /// or it registered again), oldest first.
    func claimPending(deviceID: Device.ID, lease: Lease, at now: Date, limit: Int) async throws -> [PushNotification]
    /// Pending notifications nobody holds (or whose lease expired at `now`), earliest next attempt first.
    func scheduledAttempts(at now: Date, limit: Int) async throws -> [ScheduledAttempt]
    /// Extends every lease `owner` holds (a heartbeat while its deliveries are in flight).
    func renewLeases(owner: String, until expiry: Date) async throws
    /// Gives back every lease `owner` holds, so that other instances take them at once (graceful shutdown).
    func releaseLeases(owner: String) async throws
    /// Makes parked notifications of devices of these platforms (with a token) due now: a provider for them is there.
    /// Returns how many.
    @discardableResult
    func unpark(platforms: Set<Platform>, at now: Date) async throws -> Int
    /// One notification.
    func notification(id: PushNotification.ID) async throws -> PushNotification?
    /// Pending notifications of one device, oldest first (held or not).
    func pendingNotifications(deviceID: Device.ID, limit: Int) async throws -> [PushNotification]
    /// The lease on a notification, if anyone holds one.
    func lease(of id: PushNotification.ID) async throws -> Lease?
    /// The counters of one device for one UTC day.
    func quotaCounters(deviceID: Device.ID, day: String) async throws -> QuotaCounters
    /// How many notifications are pending, and how many of those are due at `now` (their next attempt has come, those
    /// being attempted included; parked ones are due at their expiry), each counted up to `limit` (metrics: a scrape's
    /// work stays bounded).
    func outboxDepth(at now: Date, limit: Int) async throws -> OutboxDepth
}

/// The size of the outbox (``NotificationStore/outboxDepth(at:limit:)``).
public struct OutboxDepth: Sendable, Equatable {
    /// Pending notifications.
    public var pending: Int
    /// Pending notifications whose next attempt is due.
    public var due: Int

    public init(pending: Int, due: Int) {
        self.pending = pending
        self.due = due
    }
}

extension NotificationStore {
    /// Accepts one notification in a transaction of its own (tools and tests; the server batches).
    public func accept(_ notification: PushNotification, quota: QuotaRequest, lease: Lease? = nil) async throws -> AcceptDecision {
        let decisions = try await commit(
            WriteBatch(accepts: [AcceptRequest(notification: notification, quota: quota, lease: lease)], owner: lease?.owner ?? ""))
        return decisions[0]
    }
}

extension NotificationStore {
    public var concurrentBatches: Int { 1 }
}

/// Everything Herald keeps. One implementation per backend (in-memory, SQLite, PostgreSQL),
/// all held to the same contract test suite.
/// What `/readyz` says of the store.
public enum StoreReadiness: Sendable, Equatable {
    case ready
    /// The backend does not answer.
    case unreachable
    /// Reads work but writes fail (a full disk, a read-only file): sends and registrations are answered 503.
    case cannotWrite(String)
}

public protocol HeraldStore: DeviceStore, NotificationStore, APITokenStore, DashboardStore, ServerSettingStore, ActivityStore,
    AfterPushStore, RetentionStore, ScheduledSendStore, ReceiptStore, TopicStore, CallbackStore
{
    /// Whether the backend answers and takes writes (for `/readyz`).
    func readiness() async -> StoreReadiness
    /// Releases the backend's resources; nothing may be called afterwards.
    func close() async throws
    /// The other instances on the same database, when the backend is shared (PostgreSQL); `nil` otherwise.
    var cluster: (any Cluster)? { get }
}

extension HeraldStore {
    public var cluster: (any Cluster)? { nil }
}
