import Foundation
import HeraldCore
import Logging
import ServiceLifecycle

/// Where an accepted notification went (``DeliveryEngine/accept(_:quota:for:startingDelivery:)``).
public enum AcceptRoute: Sendable, Equatable {
    /// Stored leased to this instance: ``DeliveryEngine/deliver(_:device:)`` delivers it (or it was started already).
    case leased
    /// Delivery is saturated: stored unleased, it waits in the scheduler's timer queue and the store.
    case scheduled
    /// Nothing can deliver to the device now (or the accept was refused): stored, parked until a client or a
    /// provider can take it.
    case parked
}

/// Delivers the outbox: fresh notifications straight away, everything else when it is due, with bounded concurrency.
/// Four parts, each with one job:
///
/// - ``SlotPool``: bounded concurrency. Up to `maximumConcurrentDeliveries` slots take claimed work from one fair
///   ready queue; ``Configuration/residentSlots`` wait all the time, the others start on demand. It also knows what
///   this instance holds.
/// - ``OutboxScheduler`` (a `Service`): the timer queue of retries and parked notifications, refills from the store,
///   lease renewal, claims of what is due, backlog pages of connected devices.
/// - ``AttemptPolicy``: the pure delivery policy (channel order, verdicts, retries, hand-over), run in a slot by
///   ``DeliveryAttempt``, which asks the channels and saves the outcome.
/// - ``SenderRendezvous``: the senders waiting for the first attempt of what they sent.
///
/// Rules that hold across them:
/// - **Leases.** Every notification is claimed in the store before it is attempted (a fresh one is stored already
///   leased to this instance by the accept's own transaction); the store alone decides who delivers what. Leases are
///   renewed while held and given back at shutdown; a crashed instance's leases expire and are taken over.
/// - **Back-pressure.** When the ready queue is long, fresh notifications are stored unleased and wait in the timer
///   queue and the store instead of being dropped.
/// - **Parked confirmations.** A WebSocket delivery that waits for its client's confirmation leaves its slot (the
///   channel's timer calls back) and goes on in a slot under the same lease: delivered when confirmed, otherwise on
///   to the provider.
/// - **Group commit.** Outcomes are saved through ``outbox`` (``GroupCommit``), with the accepts of the send pipeline.
///   A sender waiting for a delivery is answered once its outcome is queued there, before it is committed; an outcome
///   that nobody waits for holds back (a few milliseconds) to be committed with the next accept.
///
/// Each part has its own lock; a notification accepted and delivered at once takes as many (uncontended) locks on its
/// way as it did when one type did all four jobs (seven), and no task or allocation more.
///
/// The send pipeline calls ``accept(_:quota:for:startingDelivery:)`` and, for a leased notification,
/// ``deliver(_:device:)``; the WebSocket channel and the cluster call ``deliverPending(of:)`` and ``refillSoon()``.
public final class DeliveryEngine: Service, Sendable {
    /// This instance's name in the store's leases.
    public let instanceID: String

    /// The outbox writer: accepts and delivery outcomes, one transaction per batch.
    let outbox: GroupCommit
    let pool: SlotPool
    let scheduler: OutboxScheduler
    /// The deadlines of topic sends' accepts (``commit(_:)``).
    let fanoutDeadlines = DeadlineAlarm()
    let senders: SenderRendezvous
    let attempt: DeliveryAttempt
    let store: any HeraldStore
    let providers: [Platform: any PushProvider]
    let localChannel: (any LocalChannel)?
    let clock: any WallClock
    let configuration: Configuration
    let logger: Logger

    public init(
        store: any HeraldStore, providers: [any PushProvider], localChannel: (any LocalChannel)? = nil,
        clock: any WallClock = SystemClock(), configuration: Configuration = .init(), metrics: DeliveryMetrics = .init(),
        logger: Logger, outcomeObserver: (any DeliveryOutcomeObserver)? = nil
    ) {
        self.store = store
        let providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.providers = providers
        self.localChannel = localChannel
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        let instanceID = configuration.instanceID ?? "herald-" + UUID().lowercasedText.prefix(13)
        self.instanceID = instanceID
        // Outcomes that nobody waits for hold back for an accept to ride along with, but never hold so many slots
        // that deliveries stall behind them.
        let patience = BatchPatience(
            maximumDelay: configuration.outcomeCommitDelay,
            enoughEntries: max(1, min(GroupCommit.defaultPatience.enoughEntries, configuration.maximumConcurrentDeliveries / 4)))
        let outbox = GroupCommit(
            store: store, owner: instanceID, metrics: metrics, patience: patience, timeout: configuration.storeTimeout)
        self.outbox = outbox
        let pool = SlotPool(limits: configuration.slotLimits)
        self.pool = pool
        scheduler = OutboxScheduler(
            store: store, pool: pool, clock: clock, configuration: configuration, instanceID: instanceID, logger: logger)
        let senders = SenderRendezvous()
        self.senders = senders
        attempt = DeliveryAttempt(
            store: store, providers: providers, localChannel: localChannel, cluster: store.cluster, instanceID: instanceID,
            policy: AttemptPolicy(retryPolicy: configuration.retryPolicy, handOverTimeout: configuration.handOverTimeout),
            clock: clock, outbox: outbox, senders: senders, pool: pool, metrics: metrics, logger: logger, outcomeObserver: outcomeObserver)
    }

    // MARK: What the send pipeline calls

    /// Accepts a notification through the group commit (durable when this returns), leased to this instance when
    /// something can deliver it now and delivery is not saturated, and hands it on: scheduled when saturated, started
    /// at once when leased and `startingDelivery` (otherwise the caller delivers it with ``deliver(_:device:)``).
    public func accept(
        _ notification: PushNotification, quota: QuotaRequest, for device: Device, startingDelivery: Bool = false
    ) async throws -> (AcceptDecision, AcceptRoute) {
        let canDeliver = canDeliver(to: device)
        let lease = canDeliver ? leaseForFreshNotification(for: device.id) : nil
        let decision = try await outbox.accept(AcceptRequest(notification: notification, quota: quota, lease: lease))
        guard case .accepted = decision else { return (decision, .parked) }  // not stored: the route means nothing
        if lease != nil {
            if startingDelivery { pool.enqueue([DeliveryWork(notification: notification, device: device)]) }
            return (decision, .leased)
        }
        guard canDeliver else { return (decision, .parked) }
        scheduler.schedule(notification)
        return (decision, .scheduled)
    }

    /// Starts delivering a notification accepted with the route ``AcceptRoute/leased`` and waits up to the
    /// configured delivery wait for its first attempt. `nil` when the attempt did not finish in time.
    public func deliver(_ notification: PushNotification, device: Device) async -> AttemptReport? {
        let work = DeliveryWork(notification: notification, device: device)
        guard configuration.deliveryWait > .zero else {
            pool.enqueue([work])
            return nil
        }
        let pool = pool
        return await senders.wait(for: notification.id, until: .now.advanced(by: configuration.deliveryWait)) {
            pool.enqueue([work])
        }
    }

    /// One notification, as it stands after every write queued before this call: a sender answered `delivered` reads
    /// `delivered`, although the answer went out before that outcome was durable.
    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await outbox.notification(id: id)
    }

    /// Whether something can deliver to this device now: a provider for its platform, or an open local connection
    /// (on this instance or another one).
    func canDeliver(to device: Device) -> Bool {
        providers[device.platform] != nil && device.token != nil || localChannel?.isConnected(device.id) == true
            || store.cluster?.instance(connectedTo: device.id, besides: instanceID) != nil
    }

    /// A lease for a notification about to be accepted, or `nil` when delivery is saturated (the notification is then
    /// stored unleased and scheduled).
    func leaseForFreshNotification(for deviceID: Device.ID) -> Lease? {
        guard pool.hasRoomForFresh(of: deviceID) else { return nil }
        return Lease(owner: instanceID, expiresAt: clock.now().addingTimeInterval(configuration.leaseDuration))
    }

    // MARK: What the channels call

    /// Delivers a device's pending notifications a page at a time (a client of it connected, or it registered again):
    /// see ``OutboxScheduler/deliverPending(of:)``.
    public func deliverPending(of deviceID: Device.ID) async {
        await scheduler.deliverPending(of: deviceID)
    }

    /// Reads the outbox at the next wake-up instead of at the next periodic refill (another instance gave its leases
    /// back).
    public func refillSoon() { scheduler.refillSoon() }

    /// How busy delivery is now (for metrics).
    public var load: DeliveryLoad {
        let (held, waiting) = pool.counts
        return DeliveryLoad(
            slots: configuration.maximumConcurrentDeliveries, inFlight: held - waiting, waiting: waiting,
            scheduled: scheduler.scheduledCount)
    }

    // MARK: Service

    public func run() async throws {
        do {
            // A previous run of this instance that crashed left its leases: nothing holds them now, take them back.
            try await store.releaseLeases(owner: instanceID)
        } catch {
            logger.error("Taking back the leases of a previous run failed", metadata: ["error": "\(error)"])
        }
        let platforms = Set(providers.keys)
        if !platforms.isEmpty {
            do {
                let unparked = try await store.unpark(platforms: platforms, at: clock.now())
                if unparked > 0 { logger.info("Parked notifications are due again", metadata: ["count": "\(unparked)"]) }
            } catch {
                logger.error("Unparking notifications failed", metadata: ["error": "\(error)"])
            }
        }
        logger.info(
            "Delivery engine started",
            metadata: ["providers": "\(platforms.map(\.rawValue).sorted())", "instance": "\(instanceID)"])
        await withDiscardingTaskGroup { group in
            group.addTask {
                await cancelWhenGracefulShutdown { await self.scheduler.runPasses() }
                self.stop()
            }
            group.addTask { await self.answerOverdueSenders() }
            await pool.run { work in await self.runAttempt(work) }  // until `stop()`, busy slots after their attempt
        }
        do {
            try await store.releaseLeases(owner: instanceID)
            try await store.cluster?.send(.leasesReleased(instance: instanceID))
        } catch {
            logger.error("Giving back leases at shutdown failed", metadata: ["error": "\(error)"])
        }
        logger.info("Delivery engine stopped")
    }

    /// One attempt in a slot, and what follows it once it is over: the notification is released, a pending one waits
    /// in the timer queue, its sender is answered; a claim of it made meanwhile goes on (``SlotPool/takeCustody(_:)``).
    private func runAttempt(_ work: DeliveryWork) async {
        guard case .finished(let report) = await attempt.run(work) else { return }  // parked: the slot is free meanwhile
        let id = work.notification.id
        let claimedAgain = pool.release(id)
        scheduler.attemptEnded(work, report: report)
        senders.answer(id, with: report)
        if let claimedAgain { pool.queue([claimedAgain]) }
    }

    /// Answers the senders whose delivery wait is over, every tick.
    private func answerOverdueSenders() async {
        while !Task.isCancelled, pool.isRunning {
            try? await Task.sleep(for: configuration.tick)
            senders.answerOverdue(at: .now)
        }
    }

    /// Stops taking work: idle slots end, busy ones end after their attempt, waiters are answered.
    func stop() {
        scheduler.stop()  // claims nothing more
        pool.stop()
        senders.stop()
        outbox.stopHoldingBackOutcomes()
    }
}
