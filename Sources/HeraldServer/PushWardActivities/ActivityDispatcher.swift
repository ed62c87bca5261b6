import Foundation
import HeraldActivities
import HeraldCore
import HeraldDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// Pushes PushWard activities and runs their server-managed behaviours, from the store (a `Service`).
///
/// Every pass (at least every ``pollInterval``, at once after a change on this instance) claims the activities whose
/// push or behaviour is due (``ActivityStore/claimDueActivities(at:lease:limit:)``: a lease, so one instance at a time
/// works on an activity), then for each:
/// 1. runs what fell due (a countdown's warning or end, a stale end, the deletion after `ended_ttl`) with
///    ``ActivityRules/run(_:on:now:)``, written in one transaction with its "to push" mark;
/// 2. if changes wait that were not handed on (``ActivityRecord/hasUnpushedChange``) and no earlier push of the
///    activity is still pending in the outbox, renders the newest state (``LiveActivityPayload``) for the event the
///    device needs (start, update or end, from what it was last sent) and hands it to the send pipeline as one
///    `liveactivity` notification: to the device's push-to-start token for a start, to the activity's update token
///    otherwise (without one it waits: the token's arrival makes it due). The outbox makes it durable and delivers it,
///    over the device's WebSocket first when one is connected.
///
/// So several changes before a push goes out become one push of the newest state, and an older state never follows
/// a newer one: at most one push per activity is pending in the outbox at a time, and `aps.timestamp` only grows.
final class ActivityDispatcher: Service, Sendable {
    let store: any HeraldStore
    let pipeline: SendPipeline
    let rules: ActivityRules
    let clock: any WallClock
    let attributesType: String
    let instanceID: String
    let logger: Logger
    let pollInterval: Duration
    /// The long polls of approval cards, woken when a behaviour run here settles one (its end, its expiry).
    let approvalWaiters: ApprovalWaiters?
    /// How long a claim holds an activity (a pass takes far less; a crashed instance's claims expire after it).
    let leaseDuration: TimeInterval = 30
    /// How long an activity push may wait in the outbox before it is dropped (a newer state is sent instead).
    let pushLifetime: TimeInterval = 600
    private let woken = Atomic(false)
    /// Consecutive failures per activity (device, slug), for the back-off and for logging a failure once.
    let failures = Mutex<[ActivityKey: Int]>([:])
    /// The longest back-off after repeated failures of one activity.
    static let maximumBackOff: TimeInterval = 300
    /// Dates come back from the store as seconds since 1970, which can be a rounding above the date that was written:
    /// a date this close to now counts as due.
    static let dueSlack: TimeInterval = 0.001

    init(
        store: any HeraldStore, pipeline: SendPipeline, rules: ActivityRules = ActivityRules(), clock: any WallClock,
        attributesType: String = LiveActivityPayload.defaultAttributesType, instanceID: String,
        pollInterval: Duration = .milliseconds(500), approvalWaiters: ApprovalWaiters? = nil, logger: Logger
    ) {
        self.store = store
        self.pipeline = pipeline
        self.rules = rules
        self.clock = clock
        self.attributesType = attributesType
        self.instanceID = instanceID
        self.pollInterval = pollInterval
        self.approvalWaiters = approvalWaiters
        self.logger = logger
    }

    /// Makes the next pass run now (a change on this instance has something to push).
    func wake() { woken.store(true, ordering: .relaxed) }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.runPasses() }
    }

    private func runPasses() async {
        var lastPass = ContinuousClock.now - pollInterval
        while !Task.isCancelled {
            if woken.exchange(false, ordering: .relaxed) || ContinuousClock.now - lastPass >= pollInterval {
                lastPass = .now
                while await pass() == .more, !Task.isCancelled {}
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    enum PassResult { case done, more }

    /// One claim and what it took; `.more` when the claim was full.
    func pass() async -> PassResult {
        let now = clock.now()
        let limit = 32
        let claimed: [ActivityRecord]
        do {
            // A read first: an idle poll writes nothing (no transaction on SQLite every half second).
            guard let next = try await store.nextActivityDue(), next <= now.addingTimeInterval(Self.dueSlack) else { return .done }
            claimed = try await store.claimDueActivities(
                at: now, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(leaseDuration)), limit: limit)
        } catch {
            logger.error("Claiming due activities failed", metadata: ["error": "\(error)"])
            return .done
        }
        await withDiscardingTaskGroup { group in
            for record in claimed { group.addTask { await self.work(on: record) } }
        }
        return claimed.count == limit ? .more : .done
    }

    /// Everything due for one claimed activity. On a failure the claim is given back with a back-off (1 s, doubling
    /// per consecutive failure, at most ``maximumBackOff``), logged at its first failure only; a row whose document
    /// cannot be read is set aside (nothing due any more, logged once): it never loops, whatever it holds.
    private func work(on claimed: ActivityRecord) async {
        let key = ActivityKey(deviceID: claimed.deviceID, slug: claimed.slug)
        do {
            if let due = claimed.nextDueAt, due <= clock.now().addingTimeInterval(Self.dueSlack), try await runDue(claimed) {
                approvalWaiters?.answered(key)
            }
            try await push(deviceID: claimed.deviceID, slug: claimed.slug)
            _ = failures.withLock { $0.removeValue(forKey: key) }
        } catch {
            let unreadable = error is DecodingError
            let count = failures.withLock { failures in
                let count = (failures[key] ?? 0) + 1
                failures[key] = unreadable ? nil : count
                return count
            }
            let metadata: Logger.Metadata = ["device": "\(claimed.deviceID)", "slug": "\(claimed.slug)", "error": "\(error)"]
            let retryAt: Date? = unreadable ? nil : clock.now().addingTimeInterval(Self.backOff(afterFailures: count))
            if unreadable {
                logger.error("An activity's stored document cannot be read: set aside (nothing more is done with it)", metadata: metadata)
            } else if count == 1 {
                logger.error("An activity's push failed: retried with a back-off", metadata: metadata)
            } else {
                logger.debug("An activity's push failed again", metadata: metadata.merging(["failures": "\(count)"]) { $1 })
            }
            _ = try? await changeHeld(claimed.deviceID, claimed.slug) { record in
                record.lease = nil
                record.pushDueAt = retryAt
                if unreadable { record.nextDueAt = nil }
                return ()
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
}

// MARK: Pushing

extension ActivityDispatcher {
    /// What the device is sent for the changes not yet handed on.
    struct PreparedPush: Sendable {
        var version: Int
        var push: ActivityPush
        var token: String
        var payload: [UInt8]
        /// How long the outbox tries it.
        var lifetime: TimeInterval
    }

    /// Renders and hands on the newest state of a held activity, if it needs one and nothing of it is still pending.
    func push(deviceID: Device.ID, slug: String) async throws {
        guard let device = try await store.device(id: deviceID) else { return }
        guard let current = try await store.activity(deviceID: deviceID, slug: slug), current.lease?.owner == instanceID else { return }
        var earlier: PushNotification?
        if let inFlight = current.inFlightNotification { earlier = try await pipeline.notification(id: inFlight) }
        let now = clock.now()
        let earlierPush = earlier
        let prepared = try await changeHeld(deviceID, slug) { record -> PreparedPush? in
            if let earlierPush, earlierPush.status == .expired { Self.expired(earlierPush, of: &record) }
            return self.prepare(&record, device: device, earlierPending: earlierPush?.status == .pending, now: now)
        }
        guard let prepared = prepared ?? nil else { return }
        let draft = NotificationDraft(
            pushType: .liveactivity, priority: prepared.push.apnsPriority, content: Self.content(prepared.payload),
            expiresAt: now.addingTimeInterval(pushLifetime), liveActivityToken: prepared.token)
        var pendingID: PushNotification.ID?
        var deadToken = false
        do throws(SendError) {
            let receipt = try await pipeline.send(draft, to: device)
            if receipt.notification.status == .pending { pendingID = receipt.notification.id }
        } catch {
            switch error {
            case .deadTokenDetected: deadToken = true
            case .storeUnavailable(let reason): throw ActivityPushFailed(reason: reason)
            default: logger.warning("An activity's push was refused", metadata: ["slug": "\(slug)", "reason": "\(error)"])
            }
        }
        let (finishedAt, pending, dead) = (clock.now(), pendingID, deadToken)
        _ = try await changeHeld(deviceID, slug) { record in
            try Self.finish(&record, prepared, pendingID: pending, deadToken: dead, owner: self.instanceID, now: finishedAt)
        }
    }

    /// Decides the push of a held record (and writes the decision into it): `nil` when there is none to send now.
    private func prepare(_ record: inout ActivityRecord, device: Device, earlierPending: Bool, now: Date) -> PreparedPush? {
        record.lease = nil
        if earlierPending {
            // After the earlier push: checked again in a second when a newer state waits, else when it may expire.
            record.pushDueAt = now.addingTimeInterval(record.hasUnpushedChange ? 1 : pushLifetime + 1)
            return nil
        }
        record.inFlightNotification = nil
        record.pushDueAt = nil
        guard record.hasUnpushedChange, let activity = try? record.decodedActivity() else { return nil }
        let ongoingOnDevice = record.pushedState == ActivityState.ongoing.rawValue
        let event: ActivityEvent?
        if record.isTombstone || activity.state != .ongoing {
            event = ongoingOnDevice ? .end : nil
        } else {
            event = ongoingOnDevice ? .update : .start
        }
        guard let event else {
            // Nothing the device needs (it never got the activity, or has it ended already).
            record.pushedVersion = record.version
            record.pendingPush = nil
            return nil
        }
        var push = record.decodedPendingPush ?? ActivityPush(event: event)
        push.event = event
        if event == .end, push.dismissalDate == nil { push.dismissalDate = now }
        guard let token = event == .start ? device.pushToStartToken : record.updateToken else {
            return nil  // waits for the token: its arrival makes the activity due
        }
        if event == .start { record.updateToken = nil }  // the new activity on the device reports its own
        let timestamp = ActivityTimestamp.next(after: record.pushedTimestamp, now: now)
        record.pushedTimestamp = timestamp
        do {
            let payload = try LiveActivityPayload.render(
                activity: activity, push: push, timestamp: timestamp, attributesType: attributesType, now: now)
            record.lease = Lease(owner: instanceID, expiresAt: now.addingTimeInterval(leaseDuration))
            return PreparedPush(version: record.version, push: push, token: token, payload: payload, lifetime: pushLifetime)
        } catch {
            logger.error("An activity's payload does not fit", metadata: ["slug": "\(record.slug)", "bytes": "\(error.bytes)"])
            record.pushedVersion = record.version
            record.pendingPush = nil
            return nil
        }
    }

    /// Writes what a handed-on push did: the version pushed, what the device now shows, the pending notification.
    private static func finish(
        _ record: inout ActivityRecord, _ prepared: PreparedPush, pendingID: PushNotification.ID?, deadToken: Bool, owner: String, now: Date
    ) throws {
        if record.lease?.owner == owner { record.lease = nil }
        record.pushedVersion = max(record.pushedVersion, prepared.version)
        if record.version == prepared.version { record.pendingPush = nil }
        record.pushedState = prepared.push.event == .end ? ActivityState.ended.rawValue : ActivityState.ongoing.rawValue
        record.inFlightNotification = pendingID
        // A pending push is looked at again once it may have expired (then the newest state goes instead).
        let recheck = now.addingTimeInterval(prepared.lifetime + 1)
        record.pushDueAt = record.hasUnpushedChange ? now : pendingID.map { _ in recheck }
        guard deadToken else { return }
        // A dead activity token ends that activity's pushes (not the device): it is gone from the device.
        record.pushedState = nil
        if prepared.push.event != .start { record.updateToken = nil }
        guard prepared.push.event != .start, var activity = try? record.decodedActivity(), activity.state == .ongoing else { return }
        activity.state = .ended
        activity.endedAt = activity.endedAt ?? now
        activity.updatedAt = now
        record = try record.recording(activity, push: nil, now: now)
        record.pushedVersion = record.version
        record.pendingPush = nil
        record.pushDueAt = nil
    }

    /// The push handed on last expired in the outbox before it reached the device: the device shows what it showed
    /// before it, and the activity's newest state is due again.
    private static func expired(_ notification: PushNotification, of record: inout ActivityRecord) {
        record.inFlightNotification = nil
        let event = notification.content?.providerPayloads[Platform.apns.rawValue]?.payload["aps"]?.objectValue?["event"]?.stringValue
        switch event {
        case ActivityEvent.start.rawValue?: record.pushedState = nil
        case ActivityEvent.update.rawValue?, ActivityEvent.end.rawValue?: record.pushedState = ActivityState.ongoing.rawValue
        default: break
        }
        record.pushedVersion = min(record.pushedVersion, record.version - 1)
    }

    /// Changes one activity in a transaction of its own; a tombstone whose end went out (or that needs none) is
    /// deleted. `nil` when the row is gone.
    private func changeHeld<Result: Sendable>(
        _ deviceID: Device.ID, _ slug: String, _ change: @escaping @Sendable (inout ActivityRecord) throws -> Result
    ) async throws -> Result? {
        try await store.changeActivity(deviceID: deviceID, slug: slug) { neighbourhood in
            guard var record = neighbourhood.record else { return (ActivityWrites(), nil) }
            let result = try change(&record)
            if record.isTombstone, !record.hasUnpushedChange, record.lease == nil {
                return (ActivityWrites(deletions: [slug]), result)
            }
            return (ActivityWrites(upserts: [record]), result)
        }
    }

    /// The notification content of a rendered Live Activity payload: sent byte for byte to APNs (as Home Assistant's
    /// Live Activities are), the alert's title and body for the WebSocket event.
    static func content(_ payload: [UInt8]) -> NotificationContent {
        let object = (try? JSONValue.decode(Data(payload)).objectValue) ?? [:]
        return HomeAssistantPayload.apnsContent(object)
    }
}

/// One activity of one device (the dispatcher's failure count is kept per activity).
struct ActivityKey: Hashable, Sendable {
    var deviceID: Device.ID
    var slug: String
}

/// The store failed while an activity's push was handed on: the claim is given back and tried again.
struct ActivityPushFailed: Error {
    var reason: String
}
