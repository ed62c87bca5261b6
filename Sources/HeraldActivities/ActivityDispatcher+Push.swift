import Foundation
import HeraldCore
import HeraldDelivery
import Logging
import Synchronization

extension ActivityDispatcher {
    /// What deciding a push found.
    enum Preparation: Sendable {
        case push(PreparedActivityPush)
        case nothing
        /// The row names a pending push that the decision was not given: read it and decide again (``push(_:claimed:)``).
        case earlierInFlight
    }

    /// Where the record a push is decided on comes from.
    enum PushSource: Sendable, Equatable {
        /// Claimed by this instance's lease.
        case claimed
        /// Read just before, after a change on this instance named it.
        case named
        /// Named by a change on this instance, not read before: decided on the row as the store has it.
        case namedUnread
    }

    /// Builds and hands on the newest state of an activity, if it needs one and nothing of it is still pending: one
    /// this instance claimed (its lease), or one read just before (`isClaimed` false: the transaction that decides takes
    /// the lease, unless another claim holds it). The record read tells which push is in flight; a row whose in-flight
    /// push changed since is left alone.
    func push(_ claimed: ActivityRecord, claimed isClaimed: Bool) async throws {
        let key = ActivityKey(deviceID: claimed.deviceID, slug: claimed.slug)
        guard let device = try await store.device(id: key.deviceID) else { return }
        var earlier: PushNotification?
        if let inFlight = claimed.inFlightNotification { earlier = try await pipeline.notification(id: inFlight) }
        let preparation = try await prepare(
            key, device: device, inFlight: claimed.inFlightNotification, earlier: earlier, source: isClaimed ? .claimed : .named)
        guard case .push(let prepared) = preparation else { return }
        try await send(prepared, key: key, to: device)
    }

    /// The push of an activity a change on this instance named, if one is due and no claim holds it (the claim's
    /// instance pushes it then): decided on the row without reading it first when none of its pushes is pending (the
    /// usual case: one visit to the store less), else read and decided with the pending push's status.
    func pushNamed(_ key: ActivityKey) async throws {
        guard let device = try await store.device(id: key.deviceID) else { return }
        switch try await prepare(key, device: device, inFlight: nil, earlier: nil, source: .namedUnread) {
        case .push(let prepared):
            try await send(prepared, key: key, to: device)
        case .nothing:
            return
        case .earlierInFlight:
            guard let record = try await store.activity(deviceID: key.deviceID, slug: key.slug) else { return }
            try await push(record, claimed: false)
        }
    }

    /// Decides the push in a transaction of its own and takes the lease for it (``ActivityPushDecider``).
    private func prepare(
        _ key: ActivityKey, device: Device, inFlight: PushNotification.ID?, earlier: PushNotification?, source: PushSource
    ) async throws -> Preparation {
        let now = clock.now()
        let owner = instanceID
        return try await changeHeld(key.deviceID, key.slug) { record -> Preparation in
            switch source {
            case .claimed:
                guard record.lease?.owner == owner else { return .nothing }
            case .named:
                if let lease = record.lease, lease.owner != owner, lease.expiresAt > now { return .nothing }  // claimed elsewhere meanwhile
            case .namedUnread:
                guard record.hasUnpushedChange, let due = record.pushDueAt, due <= now.addingTimeInterval(Self.dueSlack) else { return .nothing }
                if let lease = record.lease, lease.expiresAt > now { return .nothing }  // a claim holds it: that claim pushes it
            }
            guard record.inFlightNotification == inFlight else { return source == .namedUnread ? .earlierInFlight : .nothing }
            if let earlier, earlier.id == record.inFlightNotification, earlier.status == .expired { Self.expired(&record) }
            return self.decider.decide(&record, device: device, earlierPending: earlier?.status == .pending, now: now).map { .push($0) } ?? .nothing
        } ?? .nothing
    }

    /// Hands a decided push on to the send pipeline and writes what it did (decided in the writer: no JSON).
    private func send(_ prepared: PreparedActivityPush, key: ActivityKey, to device: Device) async throws {
        let now = clock.now()
        let draft = NotificationDraft(
            pushType: .liveactivity, priority: prepared.push.apnsPriority, content: prepared.message.content(),
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
            default: logger.warning("An activity's push was refused", metadata: ["slug": "\(key.slug)", "reason": "\(error)"])
            }
        }
        let (finishedAt, pending, dead, owner) = (clock.now(), pendingID, deadToken, instanceID)
        _ = try await changeHeld(key.deviceID, key.slug, decideInWriter: !dead) { record in
            try Self.finish(&record, prepared, pendingID: pending, deadToken: dead, owner: owner, now: finishedAt)
        }
    }

    /// Writes what a handed-on push did: the version pushed, its event, what the device now shows, the pending
    /// notification.
    private static func finish(
        _ record: inout ActivityRecord, _ prepared: PreparedActivityPush, pendingID: PushNotification.ID?, deadToken: Bool, owner: String, now: Date
    ) throws {
        if record.lease?.owner == owner { record.lease = nil }
        record.pushedVersion = max(record.pushedVersion, prepared.version)
        if record.version == prepared.version { record.pendingPush = nil }
        record.pushedEvent = prepared.push.event
        record.pushedState = prepared.push.event == .end ? ActivityState.ended.rawValue : ActivityState.ongoing.rawValue
        record.inFlightNotification = pendingID
        // A pending push is looked at again once it may have expired (then the newest state goes instead).
        let recheck = now.addingTimeInterval(prepared.lifetime + 1)
        record.pushDueAt = record.hasUnpushedChange ? now : pendingID.map { _ in recheck }
        if deadToken { try tokenDied(&record, event: prepared.push.event, now: now) }
    }

    /// The token a push of `event` went to is dead: that activity's pushes end (not the device's), it is gone from the
    /// device; an ongoing activity whose update token died is ended (nothing pushed: the device has none left).
    static func tokenDied(_ record: inout ActivityRecord, event: ActivityEvent, now: Date) throws {
        record.pushedState = nil
        if event != .start { record.updateToken = nil }
        guard event != .start, !record.isTombstone, var activity = try? record.decodedActivity(), activity.state == .ongoing else { return }
        activity.state = .ended
        activity.endedAt = activity.endedAt ?? now
        activity.updatedAt = now
        record = try record.recording(activity, push: nil, now: now)
        record.pushedVersion = record.version
        record.pendingPush = nil
        record.pushDueAt = nil
    }

    /// The push handed on last expired in the outbox before it reached the device: the device shows what it showed
    /// before it (known from the event it carried, ``ActivityRecord/pushedEvent``), and the newest state is due again.
    private static func expired(_ record: inout ActivityRecord) {
        record.inFlightNotification = nil
        switch record.pushedEvent {
        case .start?: record.pushedState = nil
        case .update?, .end?: record.pushedState = ActivityState.ongoing.rawValue
        case nil: break
        }
        record.pushedVersion = min(record.pushedVersion, record.version - 1)
    }
}

// MARK: A dead token found on a retry

extension ActivityDispatcher {
    /// A push of an activity was found dead on a later attempt (the first one asked for a retry): the activity is
    /// treated as a dead token found at once is (``DeliveryOutcomeObserver``, through ``ActivityDeliveryOutcomes``).
    /// The activity is the device's one whose in-flight push is `notification`; none when the push was not handed on
    /// by the dispatcher or a newer one replaced it.
    func deadTokenFound(_ notification: PushNotification) async {
        let now = clock.now()
        do {
            let records = try await store.activities(deviceID: notification.deviceID)
            guard let slug = records.first(where: { $0.inFlightNotification == notification.id })?.slug else { return }
            let ended: Bool? = try await changeHeld(notification.deviceID, slug) { record in
                guard record.inFlightNotification == notification.id, let event = record.pushedEvent else { return false }
                record.inFlightNotification = nil
                try Self.tokenDied(&record, event: event, now: now)
                if record.hasUnpushedChange, record.pushDueAt == nil { record.pushDueAt = now }
                return true
            }
            if ended == true {
                logger.info("An activity's Live Activity token was found dead on a retry", metadata: ["slug": "\(slug)"])
                settled(ActivityKey(deviceID: notification.deviceID, slug: slug))
                wake([ActivityKey(deviceID: notification.deviceID, slug: slug)])
            }
        } catch {
            logger.error(
                "Recording an activity's dead token failed", metadata: ["notification": "\(notification.id)", "cause": "\(error)"])
        }
    }
}

/// The delivery engine's outcome hook for activities: a Live Activity push whose token turned out dead on a retry
/// reaches the ``ActivityDispatcher`` (a dead token on the first attempt comes back from the send itself). Built before
/// the engine, the dispatcher attached once it exists; `next` is told of every outcome first (the tokens' callbacks).
public final class ActivityDeliveryOutcomes: DeliveryOutcomeObserver {
    private struct Attached: Sendable {
        weak var dispatcher: ActivityDispatcher?
    }
    private let next: (any DeliveryOutcomeObserver)?
    private let attached = Mutex(Attached())

    public init(next: (any DeliveryOutcomeObserver)? = nil) {
        self.next = next
    }

    /// Sends the outcomes to `dispatcher` from now on (held weakly).
    public func attach(_ dispatcher: ActivityDispatcher) {
        attached.withLock { $0.dispatcher = dispatcher }
    }

    public func outcomeSaved(_ notification: PushNotification, verdict: AttemptVerdict) async {
        await next?.outcomeSaved(notification, verdict: verdict)
        guard case .deadToken = verdict, notification.pushType == .liveactivity, notification.liveActivityToken != nil,
            let dispatcher = attached.withLock({ $0.dispatcher })
        else { return }
        await dispatcher.deadTokenFound(notification)
    }
}
