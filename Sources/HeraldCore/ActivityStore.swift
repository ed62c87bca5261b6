import Foundation

/// One stored Live Activity that Herald keeps and drives (PushWard's `/activities`), keyed by its device and slug.
///
/// The columns are what the store queries and what delivery needs; everything else about the activity (content,
/// TTLs, timeline history, log backlog) is ``document``, the activity's JSON as the rules module writes it. The row
/// is the truth of delivery too: ``version`` counts accepted changes and ``pushedVersion`` is the newest one handed
/// to the outbox, so a change and its "to push" mark are written in one transaction, and what is not pushed yet
/// survives a crash.
public struct ActivityRecord: Sendable, Equatable {
    public var deviceID: Device.ID
    public var slug: String
    /// `ongoing`, `ended` or `preempted`.
    public var state: String
    public var priority: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// The activity as JSON (the rules module's `Activity`), without its extras.
    public var document: Data
    /// The activity's accumulations (a timeline's history, a log's backlog) as JSON, kept apart from ``document`` so
    /// that changes of the device's other activities never read them; `nil` when it has none, or when they were not
    /// read (``extrasRead``).
    public var extras: Data?
    /// Whether ``extras`` was read (and is written back by an upsert). The eviction candidates of an
    /// ``ActivityNeighbourhood`` are read without: an upsert of such a record keeps the stored extras.
    public var extrasRead: Bool
    /// When its next server-managed behaviour is due (a countdown's warning or end, a stale end, deletion after
    /// `ended_ttl`); `nil` for none.
    public var nextDueAt: Date?
    /// Accepted changes, counted from 1.
    public var version: Int
    /// The newest version handed to delivery (0: none).
    public var pushedVersion: Int
    /// The push the changes not yet handed to delivery ask for (the delivery side's JSON), coalesced: `nil` for none.
    public var pendingPush: Data?
    /// When delivery should look at the activity again: a change to push, a push in flight to check; `nil` when
    /// there is nothing to do (pushed, or waiting for the device's update token).
    public var pushDueAt: Date?
    /// What the device was last sent: `nil` nothing (or its activity is gone), `ongoing` (started or updated) or `ended`.
    public var pushedState: String?
    /// The `aps.timestamp` of the last push (strictly increasing per activity, ``LiveActivityTimestamp``).
    public var pushedTimestamp: Int?
    /// The `aps.event` of the last push handed on (what an expired one had the device show, or which token a dead one
    /// went to); `nil` before the first.
    public var pushedEvent: LiveActivityMessage.Event?
    /// The outbox notification of the last push, while it may still be pending.
    public var inFlightNotification: UUID?
    /// The update token ActivityKit issued for the activity on the device (hex); `nil` until the app reports it.
    public var updateToken: String?
    /// The instance that is delivering it or running its server-managed behaviour, and until when.
    public var lease: Lease?

    public init(
        deviceID: Device.ID, slug: String, state: String, priority: Int, createdAt: Date, updatedAt: Date, document: Data,
        extras: Data? = nil, extrasRead: Bool = true, nextDueAt: Date? = nil, version: Int = 1, pushedVersion: Int = 0,
        pendingPush: Data? = nil, pushDueAt: Date? = nil,
        pushedState: String? = nil, pushedTimestamp: Int? = nil, pushedEvent: LiveActivityMessage.Event? = nil,
        inFlightNotification: UUID? = nil, updateToken: String? = nil, lease: Lease? = nil
    ) {
        self.deviceID = deviceID
        self.slug = slug
        self.state = state
        self.priority = priority
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.document = document
        self.extras = extras
        self.extrasRead = extrasRead
        self.nextDueAt = nextDueAt
        self.version = version
        self.pushedVersion = pushedVersion
        self.pendingPush = pendingPush
        self.pushDueAt = pushDueAt
        self.pushedState = pushedState
        self.pushedTimestamp = pushedTimestamp
        self.pushedEvent = pushedEvent
        self.inFlightNotification = inFlightNotification
        self.updateToken = updateToken
        self.lease = lease
    }

    /// Whether a change is accepted that delivery has not handed on yet.
    public var hasUnpushedChange: Bool { version > pushedVersion }

    /// The ``state`` of a deleted activity whose end push is still to go out (a tombstone: absent to every read of
    /// the API, not counted against the device's limit).
    public static let tombstoneState = "deleted"
    /// The ``state`` of an ongoing activity (the eviction candidates of ``ActivityNeighbourhood``).
    public static let ongoingState = "ongoing"
}

/// What a change of one activity reads (``ActivityStore/changeActivity(deviceID:slug:_:)``): that activity, the
/// device's other ongoing ones (the only rows a start can evict: a handful, never the whole device), and how many
/// activities the device holds, counted from the `state` column (tombstones left out). Nothing else of the device is
/// read, so the cost of a change does not grow with the device's other activities.
public struct ActivityNeighbourhood: Sendable, Equatable {
    /// The activity changed (`nil` when the device has none with its slug), tombstone or not.
    public var record: ActivityRecord?
    /// The device's other activities whose `state` is `ongoing`, sorted by slug, read without their extras.
    public var otherOngoing: [ActivityRecord]
    /// The device's activities that are not tombstones, ``record`` included.
    public var activityCount: Int

    public init(record: ActivityRecord?, otherOngoing: [ActivityRecord] = [], activityCount: Int) {
        self.record = record
        self.otherOngoing = otherOngoing
        self.activityCount = activityCount
    }
}

/// What one ``ActivityStore/changeActivities(deviceID:_:)`` writes: rows inserted or replaced (matched by slug), and
/// slugs deleted.
public struct ActivityWrites: Sendable, Equatable {
    public var upserts: [ActivityRecord]
    public var deletions: [String]

    public init(upserts: [ActivityRecord] = [], deletions: [String] = []) {
        self.upserts = upserts
        self.deletions = deletions
    }
}

/// Live Activities that Herald keeps (PushWard's `/activities`), with what their delivery and server-managed
/// behaviours need.
///
/// Every change is a read-modify-write of one device's activities in one transaction
/// (``changeActivities(deviceID:_:)``), serialised per device across instances, so two instances never lose an
/// update and the per-device limits (50 activities, 5 ongoing) hold. Delivery claims activities with a lease
/// (``claimDueActivities(at:lease:limit:)``): one instance at a time works on an activity.
public protocol ActivityStore: Sendable {
    /// A device's activities, sorted by slug.
    func activities(deviceID: Device.ID) async throws -> [ActivityRecord]
    /// One activity.
    func activity(deviceID: Device.ID, slug: String) async throws -> ActivityRecord?
    /// In one transaction: reads the device's activities (sorted by slug), passes them to `change` and writes what it
    /// returns (every column of an upsert, its lease included); returns what `change` returned. When `change` throws,
    /// nothing is written and its error is thrown. Concurrent calls for one device run one after the other, on every
    /// instance.
    func changeActivities<Result: Sendable>(
        deviceID: Device.ID, _ change: @escaping @Sendable ([ActivityRecord]) throws -> (ActivityWrites, Result)
    ) async throws -> Result
    /// Changes one activity: reads its ``ActivityNeighbourhood``, passes it to `change` and writes what it returns
    /// (upserts and deletions of the activity and of rows among ``ActivityNeighbourhood/otherOngoing``); returns what
    /// `change` returned. When `change` throws, nothing is written and its error is thrown. Concurrent changes of one
    /// device run as if one after the other, on every instance: `change` may be called more than once (it must be a
    /// pure decision), and only a call whose neighbourhood is still current when it is written takes effect. A store
    /// with a single writer runs `change` (where the JSON is decoded and encoded) outside its write transaction.
    func changeActivity<Result: Sendable>(
        deviceID: Device.ID, slug: String, _ change: @escaping @Sendable (ActivityNeighbourhood) throws -> (ActivityWrites, Result)
    ) async throws -> Result
    /// Changes one activity reading only its own row (the dispatcher's pushes, which neither evict nor count): as
    /// ``changeActivity(deviceID:slug:_:)``, with `change` given the record (`nil` when there is none; a store may
    /// also answer `nil` for a device that is gone, where ``changeActivity(deviceID:slug:_:)`` throws) and only that
    /// activity written (an upsert of it, or its slug deleted). A store may read less for it; the default reads the
    /// neighbourhood. `decideInWriter`: `change` is cheap (no JSON decoded or encoded), so a store with a single writer
    /// may run it inside its write transaction on the row as it is there, instead of reading the row first and checking
    /// it again when it writes.
    func changeActivityRecord<Result: Sendable>(
        deviceID: Device.ID, slug: String, decideInWriter: Bool,
        _ change: @escaping @Sendable (ActivityRecord?) throws -> (ActivityWrites, Result)
    ) async throws -> Result
    /// Claims up to `limit` activities whose push or server-managed behaviour is due at `now` (``ActivityRecord/pushDueAt``
    /// or ``ActivityRecord/nextDueAt`` not after it) and that nobody holds (or whose lease expired): writes `lease`
    /// into them and returns them (without their extras), earliest due first. Two instances never claim the same
    /// activity at once. A row that cannot be read as a record is set aside (nothing due) rather than claimed.
    func claimDueActivities(at now: Date, lease: Lease, limit: Int) async throws -> [ActivityRecord]
    /// Gives back every activity lease `owner` holds: at start (a previous run of this instance that was killed left
    /// them; nothing holds them now) and at a graceful stop (other instances take them at once).
    func releaseActivityLeases(owner: String) async throws
    /// The earliest ``ActivityRecord/pushDueAt`` or ``ActivityRecord/nextDueAt`` of any activity (held or not).
    func nextActivityDue() async throws -> Date?
    /// The `aps.timestamp` of the next Live Activity push to `token` (Home Assistant's activity tokens, which Herald
    /// keeps no activity for): ``LiveActivityTimestamp/next(after:nowSeconds:)`` of the last one this store gave for
    /// the token, written before it returns, so that it strictly increases across restarts and instances (two
    /// concurrent calls for one token get two timestamps). A token whose last timestamp is more than
    /// ``liveActivityTimestampMemory`` seconds before `now` may be forgotten (it can no longer clash).
    func nextLiveActivityTimestamp(token: String, now: Date) async throws -> Int
}

extension ActivityStore {
    public func changeActivityRecord<Result: Sendable>(
        deviceID: Device.ID, slug: String, decideInWriter: Bool,
        _ change: @escaping @Sendable (ActivityRecord?) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await changeActivity(deviceID: deviceID, slug: slug) { neighbourhood in
            let (writes, result) = try change(neighbourhood.record)
            return (writes.only(slug), result)
        }
    }

    /// ``changeActivityRecord(deviceID:slug:decideInWriter:_:)`` with a `change` that may be costly (decided outside
    /// the writer).
    public func changeActivityRecord<Result: Sendable>(
        deviceID: Device.ID, slug: String, _ change: @escaping @Sendable (ActivityRecord?) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        try await changeActivityRecord(deviceID: deviceID, slug: slug, decideInWriter: false, change)
    }
}

extension ActivityWrites {
    /// These writes restricted to the activity `slug` (a change of one activity's row writes no other).
    public func only(_ slug: String) -> ActivityWrites {
        ActivityWrites(upserts: upserts.filter { $0.slug == slug }, deletions: deletions.filter { $0 == slug })
    }
}

/// How long a store keeps a Home Assistant activity token's last timestamp once it is in the past (seconds).
public let liveActivityTimestampMemory = 3_600

extension ActivityRecord {
    /// When this activity is due for delivery or its server-managed behaviour, if at all.
    public var dueAt: Date? {
        switch (pushDueAt, nextDueAt) {
        case (let push?, let next?): min(push, next)
        case (let push?, nil): push
        case (nil, let next?): next
        case (nil, nil): nil
        }
    }
}
