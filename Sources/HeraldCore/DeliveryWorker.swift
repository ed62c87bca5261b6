import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// What became of a notification's first delivery attempt, as the send pipeline answers it.
public enum AttemptVerdict: Sendable, Equatable {
    /// A provider (or a WebSocket client) took it.
    case delivered
    /// It will be tried again (transient failure, or a WebSocket client did not confirm in time).
    case willRetry
    /// Nothing can deliver it now; it waits for a client, a re-registration or its expiry.
    case parked
    /// The provider said the device token is dead.
    case deadToken(reason: String)
    /// The device is inactive or gone.
    case deviceUnavailable(reason: String)
    /// The provider refused it for good.
    case refused(reason: String)
    /// Its time to live passed before anything took it.
    case expired
    /// A WebSocket client of its device is connected to another instance, which was asked to deliver it.
    case handedOver(instance: String)
}

/// A notification after a delivery attempt, with the verdict the attempt reached (classified once, by the provider).
public struct AttemptReport: Sendable, Equatable {
    public var notification: PushNotification
    public var verdict: AttemptVerdict
}

/// Delivers the outbox: fresh notifications straight away, everything else when it is due, with bounded concurrency.
///
/// - **Leases.** Every notification is claimed in the store before it is attempted (a fresh one is stored already
///   leased to this instance by the accept's own transaction); the store alone decides who delivers what. Leases are
///   renewed while held and given back at shutdown; a crashed instance's leases expire and are taken over.
/// - **One scheduler.** Retries and parked notifications wait in one timer queue (``DeliverySchedule``), ordered by
///   their next attempt and refilled from the store in batches (after a restart, when it runs low, and periodically so
///   that expired leases of other instances are found). Nothing scans the whole outbox.
/// - **Back-pressure.** Up to `maximumConcurrentDeliveries` slots take work from one ready queue. When that queue is
///   long, fresh notifications are stored unleased and wait in the timer queue and the store instead of being dropped.
/// - **Slots on demand.** ``Configuration/residentSlots`` slots wait for work all the time; the others are started
///   when work finds every slot busy and end when the ready queue is empty, so an idle instance does not hold a task
///   per slot of a large `maximumConcurrentDeliveries` (about 5 KB each).
/// - **Group commit.** Outcomes are saved through ``outbox`` (``GroupCommit``), with the accepts of the send pipeline.
///   A sender waiting for a delivery is answered once its outcome is queued there, before it is committed; an outcome
///   that nobody waits for holds back (a few milliseconds) to be committed with the next accept.
public final class DeliveryWorker: Service, Sendable {
    /// Tuning of the worker.
    public struct Configuration: Sendable {
        /// Deliveries in flight at once, at most.
        public var maximumConcurrentDeliveries: Int
        public var retryPolicy: RetryPolicy
        /// How long a claim holds a notification; renewed every third of it while the attempt runs.
        public var leaseDuration: TimeInterval
        /// How often the scheduler looks at its timer queue (the resolution of retry times).
        public var tick: Duration
        /// How often the timer queue is refilled from the store even when it is not low (finds expired leases).
        public var refillInterval: Duration
        /// Entries the timer queue holds in memory; the rest wait in the store.
        public var scheduleCapacity: Int
        /// How long a send request waits for the first attempt.
        public var deliveryWait: Duration
        /// A notification handed to the instance where its device's WebSocket client is connected is due again here
        /// after this long, in case that instance did not take it (it died, or the client left).
        public var handOverTimeout: TimeInterval
        /// The longest a delivery outcome that nobody waits for holds back to be committed with the next accept.
        public var outcomeCommitDelay: Duration
        /// This instance's name in leases; unique per process unless set. An instance that restarts under the same
        /// name takes back its own leases at once (they belong to its dead predecessor); under another name it waits
        /// for them to expire.
        public var instanceID: String?
        /// How long an accept or a status read waits for the group commit, at most (`HERALD_STORE_TIMEOUT_MS`);
        /// `nil`: as long as the store takes.
        public var storeTimeout: Duration?

        public init(
            maximumConcurrentDeliveries: Int = 1_024, retryPolicy: RetryPolicy = .init(), leaseDuration: TimeInterval = 30,
            tick: Duration = .milliseconds(100), refillInterval: Duration = .seconds(5), scheduleCapacity: Int = 50_000,
            deliveryWait: Duration = .milliseconds(500), handOverTimeout: TimeInterval = 15,
            outcomeCommitDelay: Duration = GroupCommit.defaultPatience.maximumDelay, instanceID: String? = nil,
            storeTimeout: Duration? = nil
        ) {
            self.storeTimeout = storeTimeout
            self.maximumConcurrentDeliveries = maximumConcurrentDeliveries
            self.retryPolicy = retryPolicy
            self.leaseDuration = leaseDuration
            self.tick = tick
            self.refillInterval = refillInterval
            self.scheduleCapacity = scheduleCapacity
            self.deliveryWait = deliveryWait
            self.handOverTimeout = handOverTimeout
            self.outcomeCommitDelay = outcomeCommitDelay
            self.instanceID = instanceID
        }

        /// Fresh notifications waiting for a slot beyond this are stored unleased and scheduled instead.
        var readyLimit: Int { maximumConcurrentDeliveries * 4 }

        /// Slots that wait for work all the time; the rest of `maximumConcurrentDeliveries` are started on demand.
        var residentSlots: Int { min(maximumConcurrentDeliveries, 64) }

        /// Places in the ready queue one device's fresh notifications may take (the rest go to the timer queue).
        var readyPerDevice: Int { max(1, readyLimit / 64) }

        /// Due attempts taken from the timer queue and waiting to be claimed in turn per device, at most.
        var dueQueueCapacity: Int { max(readyLimit, 512) }

        /// A connected device's backlog is claimed this many at a time, the next page once all of these were
        /// delivered (below the WebSocket channel's queue of 64 unwritten events per socket).
        var backlogPageSize: Int { 32 }

        /// After a backlog page of which some was not delivered, the pause before the next page.
        var backlogPause: Duration { .seconds(5) }
    }

    /// A claimed notification waiting for a slot, with its device when the caller already had it.
    struct Work: Sendable {
        var notification: PushNotification
        var device: Device?
        /// Set when the attempt goes on after the local channel answered: whether a client confirmed it.
        var confirmedLocally: Bool?
        /// Claimed as part of a connected device's backlog (``deliverPending(of:)``): its end lets the next page in.
        var isBacklog = false
    }

    /// How an attempt ended in its slot.
    enum SlotResult {
        /// The attempt is over (its report, or `nil` when its outcome could not be saved).
        case finished(AttemptReport?)
        /// A client has it and its confirmation is awaited outside the slot; the attempt goes on when it comes.
        case awaitingConfirmation
    }

    struct Waiter {
        var continuation: CheckedContinuation<AttemptReport?, Never>
        var deadline: ContinuousClock.Instant
    }

    struct State {
        /// Claimed work waiting for a slot, taken in turn per device.
        var ready = FairReadyQueue<Work>()
        /// Due attempts not claimed yet, claimed in turn per device.
        var due = FairReadyQueue<PushNotification.ID>()
        var idleSlots: [CheckedContinuation<Work?, Never>] = []
        /// Slots started on demand and not ended yet (the resident ones are always there).
        var slotsOnDemand = 0
        /// Slots on demand counted in ``slotsOnDemand`` but not requested yet (requested outside the lock).
        var slotsToStart = 0
        /// Claimed by this instance: waiting for a slot or in flight.
        var held: Set<PushNotification.ID> = []
        var schedule: DeliverySchedule
        var waiters: [PushNotification.ID: Waiter] = [:]
        var isStopping = false
        /// Devices whose backlog is being delivered page by page: the page's items not finished yet.
        var backlogs = BacklogPages()

        var readyCount: Int { ready.count }

        mutating func popReady() -> Work? { ready.popFirst() }
    }

    /// The outbox writer shared with the send pipeline.
    public let outbox: GroupCommit
    /// This instance's name in the store's leases.
    public let instanceID: String

    let store: any HeraldStore
    let providers: [Platform: any PushProvider]
    let localChannel: (any LocalChannel)?
    let cluster: (any Cluster)?
    let clock: any WallClock
    let configuration: Configuration
    let logger: Logger
    let metrics: DeliveryMetrics
    let state: Mutex<State>
    let wakeups: AsyncStream<Void>
    let wakeupSink: AsyncStream<Void>.Continuation
    /// One element per slot to start on demand (read by ``run()``, which owns the slots' task group).
    let slotRequests: AsyncStream<Void>
    let slotRequestSink: AsyncStream<Void>.Continuation

    public init(
        store: any HeraldStore, providers: [any PushProvider], localChannel: (any LocalChannel)? = nil,
        clock: any WallClock = SystemClock(), configuration: Configuration = .init(), metrics: DeliveryMetrics = .init(),
        logger: Logger
    ) {
        self.store = store
        self.providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.localChannel = localChannel
        self.cluster = store.cluster
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        let instanceID = configuration.instanceID ?? "herald-" + UUID().lowercasedText.prefix(13)
        self.instanceID = instanceID
        // Outcomes that nobody waits for hold back for an accept to ride along with, but never hold so many slots
        // that deliveries stall behind them.
        let patience = BatchPatience(
            maximumDelay: configuration.outcomeCommitDelay,
            enoughEntries: max(1, min(GroupCommit.defaultPatience.enoughEntries, configuration.maximumConcurrentDeliveries / 4)))
        self.outbox = GroupCommit(
            store: store, owner: instanceID, metrics: metrics, patience: patience, timeout: configuration.storeTimeout)
        self.state = Mutex(State(schedule: DeliverySchedule(capacity: configuration.scheduleCapacity)))
        (wakeups, wakeupSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (slotRequests, slotRequestSink) = AsyncStream.makeStream(of: Void.self)
    }

    // MARK: What the pipeline and the channels call

    /// Whether something can deliver to this device now: a provider for its platform, or an open local connection
    /// (on this instance or another one).
    public func canDeliver(to device: Device) -> Bool {
        providers[device.platform] != nil && device.token != nil || localChannel?.isConnected(device.id) == true
            || cluster?.instance(connectedTo: device.id, besides: instanceID) != nil
    }

    /// How busy delivery is now (for metrics).
    public var load: DeliveryLoad {
        state.withLock { state in
            DeliveryLoad(
                slots: configuration.maximumConcurrentDeliveries, inFlight: state.held.count - state.readyCount,
                waiting: state.readyCount, scheduled: state.schedule.count)
        }
    }

    /// A lease for a notification about to be accepted, or `nil` when delivery is saturated (the notification is then
    /// stored unleased and scheduled: see ``scheduleUnleased(_:)``).
    /// One device gets at most ``Configuration/readyPerDevice`` places in the ready queue this way: the rest of its
    /// notifications wait their turn in the timer queue, so other devices' fresh notifications still find room.
    public func leaseForFreshNotification(for deviceID: Device.ID) -> Lease? {
        let hasRoom = state.withLock {
            !$0.isStopping && $0.readyCount < configuration.readyLimit && $0.ready.count(for: deviceID) < configuration.readyPerDevice
        }
        return hasRoom ? Lease(owner: instanceID, expiresAt: clock.now().addingTimeInterval(configuration.leaseDuration)) : nil
    }

    /// Starts delivering a notification accepted under this worker's lease, without waiting.
    public func start(_ notification: PushNotification, device: Device?) {
        enqueue([Work(notification: notification, device: device)])
    }

    /// Starts delivering a notification accepted under this worker's lease and waits up to the configured delivery
    /// wait for its first attempt. `nil` when the attempt did not finish in time.
    public func deliver(_ notification: PushNotification, device: Device) async -> AttemptReport? {
        guard configuration.deliveryWait > .zero else {
            start(notification, device: device)
            return nil
        }
        let deadline = ContinuousClock.now.advanced(by: configuration.deliveryWait)
        return await withCheckedContinuation { continuation in
            let waits = state.withLock { state in
                guard !state.isStopping else { return false }
                state.waiters[notification.id] = Waiter(continuation: continuation, deadline: deadline)
                return true
            }
            start(notification, device: device)
            if !waits { continuation.resume(returning: nil) }
        }
    }

    /// A notification accepted without a lease (delivery was saturated): it waits in the timer queue, due now.
    public func scheduleUnleased(_ notification: PushNotification) {
        state.withLock {
            $0.schedule.insert(ScheduledAttempt(id: notification.id, dueAt: notification.nextAttemptAt, deviceID: notification.deviceID))
        }
        wakeupSink.yield()
    }

    /// Reads the outbox at the next wake-up instead of at the next periodic refill (another instance gave its leases
    /// back).
    public func refillSoon() {
        state.withLock { $0.schedule.markStoreHasMore() }
        wakeupSink.yield()
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
            "Delivery worker started",
            metadata: ["providers": "\(platforms.map(\.rawValue).sorted())", "instance": "\(instanceID)"])
        await withDiscardingTaskGroup { group in
            for _ in 0..<configuration.residentSlots {
                group.addTask { await self.runSlot(isResident: true) }
            }
            group.addTask { await self.runTicker() }
            group.addTask {
                await cancelWhenGracefulShutdown { await self.runScheduler() }
                self.stop()
            }
            // Ends when `stop()` finishes the stream.
            for await _ in slotRequests {
                group.addTask { await self.runSlot(isResident: false) }
            }
        }
        do {
            try await store.releaseLeases(owner: instanceID)
            try await cluster?.send(.leasesReleased(instance: instanceID))
        } catch {
            logger.error("Giving back leases at shutdown failed", metadata: ["error": "\(error)"])
        }
        logger.info("Delivery worker stopped")
    }

    /// Stops taking work: idle slots end, busy ones end after their attempt, waiters are answered.
    func stop() {
        let (idle, waiters) = state.withLock { state in
            state.isStopping = true
            let idle = state.idleSlots
            state.idleSlots = []
            let waiters = state.waiters.values.map(\.continuation)
            state.waiters = [:]
            return (idle, waiters)
        }
        for slot in idle { slot.resume(returning: nil) }
        for waiter in waiters { waiter.resume(returning: nil) }
        outbox.stopHoldingBackOutcomes()
        wakeupSink.finish()
        slotRequestSink.finish()
    }
}
