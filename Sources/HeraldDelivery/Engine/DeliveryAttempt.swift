import Foundation
import HeraldCore
import Logging

/// How an attempt left its slot.
enum SlotResult {
    /// The attempt is over (its report, or `nil` when its outcome could not be saved).
    case finished(AttemptReport?)
    /// A confirming WebSocket client has the notification: the attempt is parked outside any slot, still held (its
    /// lease renewed by the scheduler), until the local channel's timer calls back; it then goes on in a slot under
    /// the same lease, delivered when confirmed and with the fallback to the provider when not.
    case parkedAwaitingConfirmation
}

/// Runs one delivery attempt in a slot: reads what the ``AttemptPolicy`` needs, asks the channels it names (the
/// local channel, the provider), saves the outcome it decides through the group commit and counts it.
struct DeliveryAttempt: Sendable {
    let store: any DeviceStore
    let providers: [Platform: any PushProvider]
    let localChannel: (any LocalChannel)?
    let cluster: (any Cluster)?
    let instanceID: String
    let policy: AttemptPolicy
    let clock: any WallClock
    let outbox: GroupCommit
    let senders: SenderRendezvous
    let pool: SlotPool
    let metrics: DeliveryMetrics
    let logger: Logger
    /// Told of every outcome once it is saved (the tokens' outcome callbacks).
    var outcomeObserver: (any DeliveryOutcomeObserver)?

    /// One attempt: decides, delivers, saves the outcome (group commit). A failed save ends it with no report (the
    /// lease then expires and the notification is tried again).
    func run(_ work: DeliveryWork) async -> SlotResult {
        do {
            guard let decision = try await decide(work) else { return .parkedAwaitingConfirmation }
            let saved = try await save(decision, of: work.notification)
            return .finished(AttemptReport(notification: saved, verdict: decision.verdict))
        } catch {
            logger.error(
                "Saving a delivery outcome failed; the notification is tried again when its lease expires",
                metadata: ["notification": "\(work.notification.id)", "error": "\(error)"])
            return .finished(nil)
        }
    }

    /// Asks the policy, and the channels it names, until it decides; `nil` when the attempt is parked until a
    /// client's confirmation.
    private func decide(_ work: DeliveryWork) async throws -> AttemptDecision? {
        let notification = work.notification
        var now = clock.now()
        let device: Device?
        if let known = work.device { device = known } else { device = try await store.device(id: notification.deviceID) }
        var facts = AttemptFacts(device: device, local: work.local)
        if let device {
            // After an unconfirmed offer the client counts as connected (it was), whatever it did since.
            facts.isConnectedLocally = work.local == .unconfirmed || localChannel?.isConnected(device.id) == true
            if !facts.isConnectedLocally { facts.otherInstance = cluster?.instance(connectedTo: device.id, besides: instanceID) }
            facts.hasProvider = providers[device.platform] != nil
        }
        while true {
            switch policy.next(for: notification, facts, at: now) {
            case .finish(let decision):
                return decision
            case .awaitConfirmation:
                return nil
            case .offerLocally:
                facts.local = offerLocally(work, to: facts.device)
            case .sendToProvider(let counted):
                guard let device = facts.device, let provider = providers[device.platform] else {
                    facts.hasProvider = false
                    continue
                }
                facts.providerResult = await provider.send(counted, to: device)
                now = clock.now()
            }
        }
    }

    /// Offers the notification to the device's connected clients. A confirming client's answer comes back through
    /// the pool: the attempt goes on in a slot (``SlotPool/queue(_:)``) when the channel calls back.
    private func offerLocally(_ work: DeliveryWork, to device: Device?) -> LocalAnswer {
        guard let localChannel, let device else { return .notTaken }
        let pool = pool
        let offered = localChannel.offer(work.notification, to: device) { confirmed in
            var next = work
            next.device = device
            next.local = confirmed ? .confirmed : .unconfirmed
            pool.queue([next])
        }
        switch offered {
        case .delivered: return .taken
        case .awaitingConfirmation: return .awaitingConfirmation
        case .notTaken: return .notTaken
        }
    }

    /// Counts and logs the decision and saves its outcome; a hand-over then tells the instance with the client.
    /// Returns the notification as saved.
    private func save(_ decision: AttemptDecision, of notification: PushNotification) async throws -> PushNotification {
        var outcome = decision.outcome
        let verdict = decision.verdict
        outcome.notification.updatedAt = clock.now()
        log(verdict, of: outcome.notification)
        // Counted when the channel answered (what the counters describe), before anyone is told.
        metrics.record(verdict, provider: decision.channel)
        // A delivery changes nothing the sender's next request depends on (no quota given back, no device
        // deactivated), so its sender is answered once the outcome is queued, not once it is durable: one commit
        // less on the request's path. Status reads go through the same queue (`GroupCommit.notification(id:)`).
        var answerSender: (@Sendable () -> Void)?
        if verdict == .delivered {
            let report = AttemptReport(notification: outcome.notification, verdict: verdict)
            let senders = senders
            answerSender = { senders.answer(report.notification.id, with: report) }
        }
        // An outcome that nobody waits for (its sender is answered above, or has gone, or there never was one)
        // may wait for the next accept's commit. A hand-over waits for it: the other instance claims next.
        let nobodyWaits: Bool
        switch verdict {
        case .delivered: nobodyWaits = true
        case .handedOver: nobodyWaits = false
        default: nobodyWaits = !senders.isWaiting(for: notification.id)
        }
        try await outbox.save(outcome, mayWait: nobodyWaits, whenQueued: answerSender)
        await outcomeObserver?.outcomeSaved(outcome.notification, verdict: verdict)
        if case .handedOver(let instance) = verdict {
            // The lease is given back (saved above): the instance with the client claims it now.
            try? await cluster?.send(.deliverPending(deviceID: notification.deviceID, instance: instance))
        }
        return outcome.notification
    }

    private func log(_ verdict: AttemptVerdict, of notification: PushNotification) {
        switch verdict {
        case .deadToken(let reason) where notification.liveActivityToken != nil:
            logger.info("Live Activity token is dead", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
        case .deadToken(let reason):
            logger.notice(
                "Device token is dead; device marked inactive",
                metadata: ["device": "\(notification.deviceID)", "reason": "\(reason)"])
        case .refused(let reason):
            logger.warning(
                "Provider refused the notification", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
        case .willRetry:
            logger.debug(
                "Delivery will be retried",
                metadata: ["notification": "\(notification.id)", "reason": "\(notification.lastError ?? "")"])
        default:
            break
        }
    }
}
