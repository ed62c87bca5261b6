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
    private enum SlotResult {
        /// The attempt is over (its report, or `nil` when its outcome could not be saved).
        case finished(AttemptReport?)
        /// A client has it and its confirmation is awaited outside the slot; the attempt goes on when it comes.
        case awaitingConfirmation
    }

    fileprivate struct Waiter {
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
        fileprivate var waiters: [PushNotification.ID: Waiter] = [:]
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
    private let providers: [Platform: any PushProvider]
    private let localChannel: (any LocalChannel)?
    private let cluster: (any Cluster)?
    let clock: any WallClock
    let configuration: Configuration
    let logger: Logger
    private let metrics: DeliveryMetrics
    let state: Mutex<State>
    private let wakeups: AsyncStream<Void>
    private let wakeupSink: AsyncStream<Void>.Continuation
    /// One element per slot to start on demand (read by ``run()``, which owns the slots' task group).
    private let slotRequests: AsyncStream<Void>
    private let slotRequestSink: AsyncStream<Void>.Continuation

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
    private func stop() {
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

    // MARK: Slots

    /// Queues claimed work for the slots (work this instance holds already is skipped). `whileQueuing` runs under the
    /// same lock with the number queued, before any slot can take them.
    func enqueue(_ work: [Work], whileQueuing: (inout State, Int) -> Void = { _, _ in }) {
        guard !work.isEmpty else { return }
        let handOff = state.withLock { state -> [(CheckedContinuation<Work?, Never>, Work)] in
            let fresh = work.filter { state.held.insert($0.notification.id).inserted }
            whileQueuing(&state, fresh.count)
            return queue(fresh, in: &state)
        }
        startSlots(handOff)
    }

    /// Queues the rest of an attempt whose notification this instance still holds (its confirmation came, or its
    /// time is up).
    private func resume(_ work: Work) {
        startSlots(state.withLock { queue([work], in: &$0) })
    }

    /// Hands work to idle slots, queues the rest and asks for slots on demand; returns the hand-offs to make.
    private func queue(_ work: [Work], in state: inout State) -> [(CheckedContinuation<Work?, Never>, Work)] {
        var handOff: [(CheckedContinuation<Work?, Never>, Work)] = []
        for item in work {
            if let slot = state.idleSlots.popLast() {
                handOff.append((slot, item))
            } else {
                state.ready.append(item, device: item.notification.deviceID)
                if !state.isStopping, configuration.residentSlots + state.slotsOnDemand < configuration.maximumConcurrentDeliveries {
                    state.slotsOnDemand += 1
                    state.slotsToStart += 1
                }
            }
        }
        return handOff
    }

    private func startSlots(_ handOff: [(CheckedContinuation<Work?, Never>, Work)]) {
        for (slot, item) in handOff { slot.resume(returning: item) }
        let slotsToStart = state.withLock { state in
            defer { state.slotsToStart = 0 }
            return state.slotsToStart
        }
        for _ in 0..<slotsToStart {
            if case .terminated = slotRequestSink.yield() {
                state.withLock { $0.slotsOnDemand -= 1 }  // stopping: nothing starts it, and nothing is left to take
            }
        }
    }

    /// The next work for a slot; `nil` when the slot should end: the worker stops, or the slot was started on demand
    /// and the ready queue is empty.
    private func nextWork(isResident: Bool) async -> Work? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Work?, Never>) in
            let work = state.withLock { state -> Work?? in
                if let work = state.popReady() { return .some(work) }
                if !isResident {
                    state.slotsOnDemand -= 1
                    return .some(nil)
                }
                if state.isStopping { return .some(nil) }
                state.idleSlots.append(continuation)
                return .none
            }
            if let work { continuation.resume(returning: work) }
        }
    }

    private func runSlot(isResident: Bool) async {
        while let work = await nextWork(isResident: isResident) {
            guard case .finished(let report) = await attempt(work) else { continue }  // the slot is free meanwhile
            let (waiter, nextPage) = state.withLock { state in
                state.held.remove(work.notification.id)
                if let report, report.notification.status == .pending {
                    state.schedule.insert(
                        ScheduledAttempt(
                            id: report.notification.id, dueAt: report.notification.nextAttemptAt,
                            deviceID: report.notification.deviceID))
                }
                let nextPage =
                    work.isBacklog
                    ? state.backlogs.finished(work.notification.deviceID, delivered: report?.notification.status == .delivered)
                    : .nothing
                return (state.waiters.removeValue(forKey: work.notification.id), nextPage)
            }
            waiter?.continuation.resume(returning: report)
            continueBacklog(of: work.notification.deviceID, nextPage)
        }
    }

    /// Answers the sender waiting for this notification's first attempt, if one still waits.
    private func answerWaiter(with report: AttemptReport) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: report.notification.id) }
        waiter?.continuation.resume(returning: report)
    }

    // MARK: Scheduler

    /// Wakes the scheduler every tick (it sleeps until the next wake-up or tick) and answers send requests whose
    /// delivery wait is over.
    private func runTicker() async {
        while !Task.isCancelled, !state.withLock({ $0.isStopping }) {
            try? await Task.sleep(for: configuration.tick)
            let now = ContinuousClock.now
            let expired = state.withLock { state -> [CheckedContinuation<AttemptReport?, Never>] in
                guard !state.waiters.isEmpty else { return [] }
                let ids = state.waiters.filter { $0.value.deadline <= now }.map(\.key)
                return ids.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
            }
            for waiter in expired { waiter.resume(returning: nil) }
            wakeupSink.yield()
        }
    }

    private func runScheduler() async {
        let wallClock = ContinuousClock()
        var nextRefill = wallClock.now
        var nextRenewal = wallClock.now.advanced(by: .seconds(configuration.leaseDuration / 3))
        for await _ in wakeups {
            let now = clock.now()
            if wallClock.now >= nextRenewal {
                nextRenewal = wallClock.now.advanced(by: .seconds(configuration.leaseDuration / 3))
                await renewLeases(now: now)
            }
            let needsRefill = state.withLock { $0.schedule.needsRefill }
            if needsRefill || wallClock.now >= nextRefill {
                nextRefill = wallClock.now.advanced(by: configuration.refillInterval)
                await refillSchedule(now: now)
            }
            await claimDue(now: now)
            resumeBacklogsWaitingForRoom()
        }
    }

    private func renewLeases(now: Date) async {
        guard state.withLock({ !$0.held.isEmpty }) else { return }
        do {
            try await store.renewLeases(owner: instanceID, until: now.addingTimeInterval(configuration.leaseDuration))
        } catch {
            logger.error("Renewing leases failed", metadata: ["error": "\(error)"])
        }
    }

    private func refillSchedule(now: Date) async {
        let limit = max(configuration.scheduleCapacity / 2, 1)
        do {
            let attempts = try await store.scheduledAttempts(at: now, limit: limit)
            state.withLock { state in
                state.schedule.refill(with: attempts.filter { !state.held.contains($0.id) }, complete: attempts.count < limit)
            }
        } catch {
            logger.error("Reading the outbox schedule failed", metadata: ["error": "\(error)"])
        }
    }

    /// Claims what is due, as far as the ready queue has room, in batches.
    private func claimDue(now current: Date) async {
        // Stored times come back from the store as seconds since 1970 and are not always the same `Date` to the last
        // bit; a millisecond of slack makes "due now" mean the same in the timer queue and in the store's claim.
        let now = current.addingTimeInterval(0.001)
        while true {
            // What is due moves from the timer queue (time order) to the due queue, from which it is claimed in turn
            // per device: one device's thousands of retries do not make another's notification wait behind them.
            let due = state.withLock { state -> [PushNotification.ID] in
                let room = configuration.readyLimit - state.readyCount
                guard room > 0, !state.isStopping else { return [] }
                let refill = configuration.dueQueueCapacity - state.due.count
                if refill > 0 {
                    for attempt in state.schedule.popDue(at: now, limit: refill) { state.due.append(attempt.id, device: attempt.deviceID) }
                }
                var ids: [PushNotification.ID] = []
                while ids.count < min(room, 512), let id = state.due.popFirst() { ids.append(id) }
                return ids
            }
            guard !due.isEmpty else { return }
            do {
                let lease = Lease(owner: instanceID, expiresAt: now.addingTimeInterval(configuration.leaseDuration))
                let claimed = try await store.claim(due, lease: lease, at: now)
                enqueue(claimed.map { Work(notification: $0, device: nil) })
            } catch {
                logger.error("Claiming due notifications failed", metadata: ["error": "\(error)"])
                state.withLock { $0.schedule.markStoreHasMore() }
                return
            }
            if due.count < 512 { return }
        }
    }

    // MARK: One attempt

    /// One delivery attempt: decides, delivers, saves the outcome (group commit). `nil` when the outcome could not be
    /// saved (the lease then expires and the notification is tried again).
    private func attempt(_ work: Work) async -> SlotResult {
        var notification = work.notification
        let now = clock.now()
        var outcome: DeliveryOutcome
        let verdict: AttemptVerdict
        var provider = DeliveryMetrics.noProvider
        do {
            let device: Device?
            if let known = work.device { device = known } else { device = try await store.device(id: notification.deviceID) }
            if work.confirmedLocally == true {
                // A client has it, whatever the time now.
                provider = Platform.websocket.rawValue
                (outcome, verdict) = Self.deliveredLocally(notification)
            } else if notification.expiresAt <= now {
                notification.status = .expired
                notification.lastError = "Expired before it could be delivered"
                outcome = DeliveryOutcome(notification: notification, releasesQuota: true)
                verdict = .expired
            } else if let device, device.isActive {
                guard let delivery = await deliver(work, to: device, provider: &provider) else { return .awaitingConfirmation }
                (outcome, verdict) = delivery
            } else {
                let reason = device.map { "The device must register again: \($0.inactiveReason ?? "it has no push token")" }
                    ?? "The device was removed"
                notification.status = .failed
                notification.lastError = reason
                outcome = DeliveryOutcome(notification: notification, releasesQuota: true)
                verdict = .deviceUnavailable(reason: reason)
            }
            outcome.notification.updatedAt = clock.now()
            // Counted when the channel answered (what the counters describe), before anyone is told.
            metrics.record(verdict, provider: provider)
            // A delivery changes nothing the sender's next request depends on (no quota given back, no device
            // deactivated), so its sender is answered once the outcome is queued, not once it is durable: one commit
            // less on the request's path. Status reads go through the same queue (`GroupCommit.notification(id:)`).
            var answerSender: (@Sendable () -> Void)?
            if verdict == .delivered {
                let report = AttemptReport(notification: outcome.notification, verdict: verdict)
                answerSender = { self.answerWaiter(with: report) }
            }
            // An outcome that nobody waits for (its sender is answered above, or has gone, or there never was one)
            // may wait for the next accept's commit. A hand-over waits for it: the other instance claims next.
            let nobodyWaits: Bool
            switch verdict {
            case .delivered: nobodyWaits = true
            case .handedOver: nobodyWaits = false
            default: nobodyWaits = state.withLock { $0.waiters[notification.id] == nil }
            }
            try await outbox.save(outcome, mayWait: nobodyWaits, whenQueued: answerSender)
            if case .handedOver(let instance) = verdict {
                // The lease is given back (saved above): the instance with the client claims it now.
                try? await cluster?.send(.deliverPending(deviceID: notification.deviceID, instance: instance))
            }
        } catch {
            logger.error(
                "Saving a delivery outcome failed; the notification is tried again when its lease expires",
                metadata: ["notification": "\(notification.id)", "error": "\(error)"])
            return .finished(nil)
        }
        return .finished(AttemptReport(notification: outcome.notification, verdict: verdict))
    }

    private static func deliveredLocally(_ original: PushNotification) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        notification.attempts += 1
        notification.status = .delivered
        notification.providerMessageID = nil
        notification.lastError = nil
        return (DeliveryOutcome(notification: notification), .delivered)
    }

    /// Order: an open local connection first (the WebSocket channel), then one on another instance (which is handed
    /// the notification), then the device's cloud provider. `provider` is set to the channel that made the attempt.
    /// `nil` when a client has the notification and its confirmation is awaited: the attempt goes on (``resume(_:)``)
    /// when the channel calls back, without holding a slot meanwhile.
    private func deliver(
        _ work: Work, to device: Device, provider channel: inout String
    ) async -> (DeliveryOutcome, AttemptVerdict)? {
        var notification = work.notification
        let now = clock.now()
        // After an unconfirmed offer the client counts as connected (it was), whatever it did since.
        let isConnected = work.confirmedLocally == false || localChannel?.isConnected(device.id) == true
        if isConnected { channel = Platform.websocket.rawValue }
        if work.confirmedLocally == nil, isConnected, let localChannel {
            let offered = localChannel.offer(notification, to: device) { [self] confirmed in
                var next = work
                next.device = device
                next.confirmedLocally = confirmed
                resume(next)
            }
            switch offered {
            case .delivered: return Self.deliveredLocally(notification)
            case .awaitingConfirmation: return nil
            case .notTaken: break
            }
        }
        if !isConnected, let instance = cluster?.instance(connectedTo: device.id, besides: instanceID) {
            // Still pending, lease given back: that instance claims it (and falls back to the provider itself if its
            // client does not confirm); due here again only if it does not.
            notification.nextAttemptAt = now.addingTimeInterval(configuration.handOverTimeout)
            return (DeliveryOutcome(notification: notification), .handedOver(instance: instance))
        }
        if let provider = providers[device.platform], device.token != nil {
            channel = provider.platform.rawValue
            notification.attempts += 1
            return apply(await provider.send(notification, to: device), to: notification, device: device)
        }
        if isConnected {
            // A connected client did not confirm and nothing else can deliver: try it again with back-off.
            notification.attempts += 1
            return retry(notification, reason: "The WebSocket client did not confirm the notification", after: nil, at: now)
        }
        // Parked: due again at its expiry, unless a client connects or the device registers again first.
        notification.nextAttemptAt = notification.expiresAt
        return (DeliveryOutcome(notification: notification, isParked: true), .parked)
    }

    /// Applies a provider's verdict (classified once, by the provider).
    private func apply(_ result: DeliveryResult, to original: PushNotification, device: Device) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        switch result {
        case .delivered(let messageID):
            notification.status = .delivered
            notification.providerMessageID = messageID
            notification.lastError = nil
            return (DeliveryOutcome(notification: notification), .delivered)
        case .deadToken(let reason) where notification.liveActivityToken != nil:
            // The activity ended (or its push-to-start token changed): this push fails, the device stays active.
            notification.status = .failed
            notification.lastError = reason
            logger.info("Live Activity token is dead", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .deadToken(reason: reason))
        case .deadToken(let reason):
            notification.status = .failed
            notification.lastError = reason
            logger.notice("Device token is dead; device marked inactive", metadata: ["device": "\(device.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true, deadToken: device.token), .deadToken(reason: reason))
        case .retry(let reason, let minimum):
            return retry(notification, reason: reason, after: minimum, at: clock.now())
        case .failed(let reason):
            notification.status = .failed
            notification.lastError = reason
            logger.warning("Provider refused the notification", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .refused(reason: reason))
        }
    }

    private func retry(_ original: PushNotification, reason: String, after minimum: Duration?, at now: Date) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        let seconds = minimum.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let next = now.addingTimeInterval(configuration.retryPolicy.delay(afterAttempts: notification.attempts, providerMinimum: seconds))
        notification.lastError = reason
        guard next < notification.expiresAt else {
            notification.status = .expired
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .expired)
        }
        logger.debug("Delivery will be retried", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
        notification.nextAttemptAt = next
        return (DeliveryOutcome(notification: notification), .willRetry)
    }
}
