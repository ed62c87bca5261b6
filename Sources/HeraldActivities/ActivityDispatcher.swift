import Foundation
import HeraldCore
import HeraldDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// Pushes PushWard activities and runs their server-managed behaviours, from the store (a `Service`).
///
/// Every pass claims the activities whose push or behaviour is due (``ActivityStore/claimDueActivities(at:lease:limit:)``:
/// a lease, so one instance at a time works on an activity), then for each:
/// 1. runs what fell due (a countdown's warning or end, a stale end, the deletion after `ended_ttl`) with
///    ``ActivityRules/run(_:on:now:)``, written in one transaction with its "to push" mark;
/// 2. if changes wait that were not handed on (``ActivityRecord/hasUnpushedChange``) and no earlier push of the
///    activity is still pending in the outbox, builds the newest state's ``LiveActivityMessage``
///    (``LiveActivityPayload``) for the event the device needs (start, update or end, from what it was last sent) and
///    hands it to the send pipeline as one `liveactivity` notification: to the device's push-to-start token for a
///    start, to the activity's update token otherwise (without one it waits: the token's arrival makes it due). The
///    outbox makes it durable and delivers it, over the device's WebSocket first when one is connected.
///
/// It sleeps until a change on this instance wakes it (``wake(_:)``), until the earliest due time the store knows, or at
/// most ``pollInterval`` (changes made on another instance), as the outbox's scheduler does: no polling of a flag. The
/// activities a change on this instance names are pushed without a claim first: the transaction that decides the push
/// takes the lease itself (unless another claim holds the activity), one write less per push.
///
/// So several changes before a push goes out become one push of the newest state, and an older state never follows
/// a newer one: at most one push per activity is pending in the outbox at a time, and `aps.timestamp` only grows.
public final class ActivityDispatcher: Service, Sendable {
    let store: any ActivityStore & DeviceStore
    let pipeline: SendPipeline
    let rules: ActivityRules
    let clock: any WallClock
    let instanceID: String
    let logger: Logger
    /// The longest sleep between passes (another instance's changes are seen within it).
    let pollInterval: Duration
    /// Told when a behaviour run here settles an approval card (its end, its expiry), for the card's long polls.
    let settled: @Sendable (ActivityKey) -> Void
    /// How long a claim holds an activity (a pass takes far less; a crashed instance's claims expire after it).
    var leaseDuration: TimeInterval { decider.leaseDuration }
    /// How long an activity push may wait in the outbox before it is dropped (a newer state is sent instead).
    var pushLifetime: TimeInterval { decider.pushLifetime }
    let signal: ActivityWakeSignal
    /// Decides an activity's push on its row.
    let decider: ActivityPushDecider
    /// Activities changed on this instance since the last pass (``wake(_:)``), pushed without a claim.
    let woken = Mutex<Set<ActivityKey>>([])
    /// Consecutive failures per activity (device, slug), for the back-off and for logging a failure once.
    let failures = Mutex<[ActivityKey: Int]>([:])
    /// The longest back-off after repeated failures of one activity.
    static let maximumBackOff: TimeInterval = 300
    /// Dates come back from the store as seconds since 1970, which can be a rounding above the date that was written:
    /// a date this close to now counts as due.
    static let dueSlack: TimeInterval = 0.001
    /// Activities claimed by one pass.
    static let claimLimit = 32

    public init(
        store: any ActivityStore & DeviceStore, pipeline: SendPipeline, rules: ActivityRules = ActivityRules(), clock: any WallClock,
        attributesType: String = LiveActivityPayload.defaultAttributesType, instanceID: String,
        pollInterval: Duration = .milliseconds(500), settled: @escaping @Sendable (ActivityKey) -> Void = { _ in }, logger: Logger
    ) {
        self.store = store
        self.pipeline = pipeline
        self.rules = rules
        self.clock = clock
        self.instanceID = instanceID
        self.pollInterval = pollInterval
        self.settled = settled
        self.logger = logger
        signal = ActivityWakeSignal()
        decider = ActivityPushDecider(
            attributesType: attributesType, owner: instanceID, leaseDuration: 30, pushLifetime: 600, logger: logger)
    }

    /// Makes the next pass run now.
    public func wake() { signal.wake() }

    /// Makes the next pass run now and push `keys` first, without claiming them (they changed on this instance).
    public func wake(_ keys: [ActivityKey]) {
        woken.withLock { $0.formUnion(keys) }
        signal.wake()
    }

    public func run() async throws {
        await releaseLeases("Taking back the activity leases of a previous run failed")
        await cancelWhenGracefulShutdown { await self.runPasses() }
        await releaseLeases("Giving back activity leases at shutdown failed")
    }

    /// Gives back this instance's activity leases: at start, those a previous run that was killed left (the same
    /// instance id; nothing holds them now, and a change named here would wait for them to expire), at a graceful stop,
    /// those of the passes that ended.
    func releaseLeases(_ failure: Logger.Message) async {
        do {
            try await store.releaseActivityLeases(owner: instanceID)
        } catch {
            logger.error(failure, metadata: ["cause": "\(error)"])
        }
    }

    private func runPasses() async {
        while !Task.isCancelled {
            var result = await pass()
            while result == .more, !Task.isCancelled { result = await pass() }
            await signal.wait(upTo: sleep(after: result))
        }
    }

    /// How long to sleep after a pass: until the earliest due time, at most ``pollInterval``.
    func sleep(after result: PassResult) -> Duration {
        guard case .done(let next?) = result else { return pollInterval }
        let seconds = next.timeIntervalSince(clock.now())
        guard seconds.isFinite, seconds > 0 else { return .zero }
        return seconds >= pollInterval.seconds ? pollInterval : .milliseconds(Int64((seconds * 1_000).rounded(.up)))
    }

    /// What a pass found: more claimed than one pass takes, or nothing more due before `nextDue` (`nil`: nothing this
    /// instance can claim now, or the store did not answer).
    public enum PassResult: Sendable, Equatable {
        case more
        case done(nextDue: Date?)
    }

    /// The activities this instance's changes named (without a claim), then one claim and the work on what it took.
    public func pass() async -> PassResult {
        let named = woken.withLock { woken in
            defer { woken.removeAll() }
            return woken
        }
        if !named.isEmpty {
            await withDiscardingTaskGroup { group in
                for key in named { group.addTask { await self.work(onNamed: key) } }
            }
        }
        let now = clock.now()
        let claimed: [ActivityRecord]
        do {
            // A read first: an idle pass writes nothing (no transaction on SQLite every half second).
            let next = try await store.nextActivityDue()
            guard let next, next <= now.addingTimeInterval(Self.dueSlack) else { return .done(nextDue: next) }
            claimed = try await store.claimDueActivities(
                at: now, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(leaseDuration)), limit: Self.claimLimit)
        } catch {
            logger.error("Claiming due activities failed", metadata: ["cause": "\(error)"])
            return .done(nextDue: nil)
        }
        guard !claimed.isEmpty else { return .done(nextDue: nil) }  // due, but held by another instance
        await withDiscardingTaskGroup { group in
            for record in claimed { group.addTask { await self.work(onClaimed: record) } }
        }
        return .more
    }

    /// An activity a change on this instance named: its push, if one is due and no claim holds it (the claim's
    /// instance pushes it then). Its server-managed behaviours are left to the claims.
    private func work(onNamed key: ActivityKey) async {
        await attempt(key) { try await self.pushNamed(key) }
    }

    /// Everything due for one activity claimed by this instance's lease.
    private func work(onClaimed claimed: ActivityRecord) async {
        await attempt(ActivityKey(deviceID: claimed.deviceID, slug: claimed.slug)) {
            if let due = claimed.nextDueAt, due <= self.clock.now().addingTimeInterval(Self.dueSlack), try await self.runDue(claimed) {
                self.settled(ActivityKey(deviceID: claimed.deviceID, slug: claimed.slug))
            }
            try await self.push(claimed, claimed: true)
        }
    }

    /// Runs `work` on one activity. On a failure the activity is given back with a back-off (1 s, doubling per
    /// consecutive failure, at most ``maximumBackOff``), logged at its first failure only; a row whose document cannot
    /// be read is set aside (nothing due any more, logged once): it never loops, whatever it holds.
    private func attempt(_ key: ActivityKey, _ work: () async throws -> Void) async {
        do {
            try await work()
            _ = failures.withLock { $0.removeValue(forKey: key) }
        } catch {
            let unreadable = error is DecodingError
            let count = failures.withLock { failures in
                let count = (failures[key] ?? 0) + 1
                failures[key] = unreadable ? nil : count
                return count
            }
            let metadata: Logger.Metadata = ["device": "\(key.deviceID)", "slug": "\(key.slug)", "cause": "\(error)"]
            let retryAt: Date? = unreadable ? nil : clock.now().addingTimeInterval(Self.backOff(afterFailures: count))
            if unreadable {
                logger.error("An activity's stored document cannot be read: set aside (nothing more is done with it)", metadata: metadata)
            } else if count == 1 {
                logger.error("An activity's push failed: retried with a back-off", metadata: metadata)
            } else {
                logger.debug("An activity's push failed again", metadata: metadata.merging(["failures": "\(count)"]) { $1 })
            }
            do {
                _ = try await changeHeld(key.deviceID, key.slug, decideInWriter: true) { record in
                    record.lease = nil
                    record.pushDueAt = retryAt
                    if unreadable { record.nextDueAt = nil }
                    return ()
                }
            } catch {
                logger.debug("Giving an activity's claim back failed: it expires", metadata: metadata.merging(["cause": "\(error)"]) { $1 })
            }
        }
    }

    /// Seconds to wait after `failures` consecutive failures: 1, 2, 4, … at most ``maximumBackOff``.
    static func backOff(afterFailures failures: Int) -> TimeInterval {
        min(maximumBackOff, pow(2, Double(min(max(failures, 1), 20) - 1)))
    }

    /// Runs the server-managed behaviour that fell due, in one transaction with its push mark (and its deletion).
    /// Whether it left the activity settled for an approval card's long polls (``ApprovalRules/isSettled(_:)``).
    private func runDue(_ claimed: ActivityRecord) async throws -> Bool {
        let now = clock.now()
        let (rules, owner) = (rules, instanceID)
        return try await store.changeActivity(deviceID: claimed.deviceID, slug: claimed.slug) { neighbourhood in
            guard let record = neighbourhood.record, record.lease?.owner == owner, !record.isTombstone else {
                return (ActivityWrites(), false)
            }
            let activity = try record.decodedActivity()
            guard let due = ActivitySchedule.nextDue(of: activity, rules: rules), due.at <= now else {
                var unchanged = record
                unchanged.nextDueAt = ActivitySchedule.nextDue(of: activity, rules: rules)?.at
                return (ActivityWrites(upserts: [unchanged]), false)
            }
            guard let outcome = rules.run(due, on: activity, now: now) else {
                var unchanged = record
                unchanged.nextDueAt = nil  // not what is due after all: nothing until the next change
                return (ActivityWrites(upserts: [unchanged]), false)
            }
            let writes = try ActivityService.writes(
                for: outcome, slug: record.slug, existing: record, others: neighbourhood.otherOngoing, deviceID: record.deviceID, now: now)
            return (writes, ApprovalRules.isSettled(outcome.activity))
        }
    }

    /// Changes one activity, reading only its own row (``ActivityStore/changeActivityRecord(deviceID:slug:decideInWriter:_:)``;
    /// `decideInWriter` for a cheap `change`), and writes it (nothing when `change` leaves it as it was); a tombstone whose
    /// end went out (or that needs none) is deleted. `nil` when the row is gone.
    func changeHeld<Result: Sendable>(
        _ deviceID: Device.ID, _ slug: String, decideInWriter: Bool = false, _ change: @escaping @Sendable (inout ActivityRecord) throws -> Result
    ) async throws -> Result? {
        try await store.changeActivityRecord(deviceID: deviceID, slug: slug, decideInWriter: decideInWriter) { read in
            guard let read else { return (ActivityWrites(), nil) }
            var record = read
            let result = try change(&record)
            if record == read, !(record.isTombstone && !record.hasUnpushedChange && record.lease == nil) { return (ActivityWrites(), result) }
            if record.isTombstone, !record.hasUnpushedChange, record.lease == nil {
                return (ActivityWrites(deletions: [slug]), result)
            }
            return (ActivityWrites(upserts: [record]), result)
        }
    }
}

/// One activity of one device (the dispatcher's failure count and the approval cards' long polls are kept per activity).
public struct ActivityKey: Hashable, Sendable {
    public var deviceID: Device.ID
    public var slug: String

    public init(deviceID: Device.ID, slug: String) {
        self.deviceID = deviceID
        self.slug = slug
    }
}

/// The store failed while an activity's push was handed on: the claim is given back and tried again.
struct ActivityPushFailed: Error {
    var reason: String
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
