import Foundation
import HeraldCore
import Logging
import ServiceLifecycle
import Synchronization

/// The outbox scheduler: what this instance delivers besides fresh notifications, and when.
///
/// - **One timer queue.** Retries and parked notifications wait in ``DeliverySchedule``, ordered by their next
///   attempt and refilled from the store in batches (after a restart, when it runs low, and every
///   ``DeliveryEngine/Configuration/refillInterval`` so that expired leases of other instances are found). Nothing
///   scans the whole outbox.
/// - **Claims in turn.** What is due moves to a ``FairReadyQueue`` of ids and is claimed in the store, in batches,
///   as far as the slot pool's ready queue has room: one device's thousands of retries do not make another's
///   notification wait behind them.
/// - **Leases.** Every third of ``DeliveryEngine/Configuration/leaseDuration`` it renews the leases of what the pool
///   holds (a notification parked until its WebSocket confirmation included).
/// - **Backlog pages.** A device whose client connected gets its pending notifications a page at a time
///   (OutboxScheduler+Backlog.swift).
///
/// It wakes every ``DeliveryEngine/Configuration/tick`` and when told (``wake()``); each pass reads the injected
/// clock once. Tests drive a pass without waiting: ``pass(now:)``.
final class OutboxScheduler: Service, Sendable {
    struct State {
        var schedule: DeliverySchedule
        /// Due attempts not claimed yet, claimed in turn per device.
        var due = FairReadyQueue<PushNotification.ID>()
        /// Devices whose backlog is being delivered page by page: the page's items not finished yet.
        var backlogs = BacklogPages()
        /// When each device was last woken (``deliverPending(of:)``): it registered again, or a client subscribed.
        var wokenAt: [Device.ID: ContinuousClock.Instant] = [:]
        var isStopping = false
    }

    let store: any NotificationStore
    let pool: SlotPool
    let clock: any WallClock
    let configuration: DeliveryEngine.Configuration
    let instanceID: String
    let logger: Logger
    let state: Mutex<State>
    private let wakeups: AsyncStream<Void>
    private let wakeupSink: AsyncStream<Void>.Continuation

    init(
        store: any NotificationStore, pool: SlotPool, clock: any WallClock, configuration: DeliveryEngine.Configuration,
        instanceID: String,
        logger: Logger
    ) {
        self.store = store
        self.pool = pool
        self.clock = clock
        self.configuration = configuration
        self.instanceID = instanceID
        self.logger = logger
        self.state = Mutex(State(schedule: DeliverySchedule(capacity: configuration.scheduleCapacity)))
        (wakeups, wakeupSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Entries of the timer queue.
    var scheduledCount: Int { state.withLock { $0.schedule.count } }

    /// Adds a pending notification nobody holds to the timer queue (a retry, a parked one, one accepted while delivery
    /// was saturated) and wakes the scheduler.
    func schedule(_ notification: PushNotification) {
        state.withLock {
            $0.schedule.insert(
                ScheduledAttempt(id: notification.id, dueAt: notification.nextAttemptAt, deviceID: notification.deviceID))
        }
        wake()
    }

    /// An attempt ended in its slot (its notification released by the pool): a notification still pending waits in
    /// the timer queue; a backlog page may go on.
    func attemptEnded(_ work: DeliveryWork, report: AttemptReport?) {
        let pending = report.map { $0.notification.status == .pending } ?? false
        guard pending || work.isBacklog else { return }
        let deviceID = work.notification.deviceID
        // Parked by an attempt that read the device before it was woken: the wake's claim found this notification held
        // and passed it over. Claim again, now that it is released, so that it goes out through what woke the device
        // (a loaded run left such a notification parked until its expiry: ContentRenderingTests, WebSocketTests).
        if report?.verdict == .parked, let woken = state.withLock({ $0.wokenAt[deviceID] }), woken >= work.claimedAt {
            Task { await self.deliverPending(of: deviceID) }
        }
        let next = state.withLock { state in
            if pending, let notification = report?.notification {
                state.schedule.insert(
                    ScheduledAttempt(id: notification.id, dueAt: notification.nextAttemptAt, deviceID: notification.deviceID))
            }
            return work.isBacklog
                ? state.backlogs.finished(work.notification.deviceID, delivered: report?.notification.status == .delivered)
                : .nothing
        }
        continueBacklog(of: work.notification.deviceID, next)
    }

    /// Reads the outbox at the next wake-up instead of at the next periodic refill (another instance gave its leases
    /// back).
    func refillSoon() {
        state.withLock { $0.schedule.markStoreHasMore() }
        wake()
    }

    func wake() { wakeupSink.yield() }

    /// Stops claiming; ``run()`` returns.
    func stop() {
        state.withLock { $0.isStopping = true }
        wakeupSink.finish()
    }

    // MARK: Service

    /// Passes until ``stop()`` (or cancellation), woken every tick and on demand.
    func run() async throws { await runPasses() }

    func runPasses() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.runTicker() }
            let monotonic = ContinuousClock()
            var nextRefill = monotonic.now
            var nextRenewal = monotonic.now.advanced(by: .seconds(configuration.leaseDuration / 3))
            for await _ in wakeups {
                let renews = monotonic.now >= nextRenewal
                if renews { nextRenewal = monotonic.now.advanced(by: .seconds(configuration.leaseDuration / 3)) }
                let refills = monotonic.now >= nextRefill || state.withLock { $0.schedule.needsRefill }
                if refills { nextRefill = monotonic.now.advanced(by: configuration.refillInterval) }
                await pass(now: clock.now(), renewingLeases: renews, refilling: refills)
            }
            stop()  // ends the ticker when the loop ended by cancellation
        }
    }

    /// One pass: renews leases when asked, refills the timer queue when asked or low, claims what is due, and lets
    /// backlogs that waited for room go on.
    func pass(now: Date, renewingLeases: Bool = false, refilling: Bool = false) async {
        if renewingLeases { await renewLeases(now: now) }
        if refilling || state.withLock({ $0.schedule.needsRefill }) { await refillSchedule(now: now) }
        await claimDue(now: now)
        resumeBacklogsWaitingForRoom()
    }

    /// Wakes the scheduler every tick (it sleeps until the next wake-up or tick).
    private func runTicker() async {
        while !Task.isCancelled, !state.withLock({ $0.isStopping }) {
            try? await Task.sleep(for: configuration.tick)
            wake()
        }
    }

    func renewLeases(now: Date) async {
        guard pool.holdsAny else { return }
        do {
            try await store.renewLeases(owner: instanceID, until: now.addingTimeInterval(configuration.leaseDuration))
        } catch {
            logger.error("Renewing leases failed", metadata: ["error": "\(error)"])
        }
    }

    func refillSchedule(now: Date) async {
        let limit = max(configuration.scheduleCapacity / 2, 1)
        do {
            let attempts = try await store.scheduledAttempts(at: now, limit: limit)
            let notHeld = pool.notHeld(attempts)
            state.withLock { $0.schedule.refill(with: notHeld, complete: attempts.count < limit) }
        } catch {
            logger.error("Reading the outbox schedule failed", metadata: ["error": "\(error)"])
        }
    }

    /// Claims what is due, as far as the ready queue has room, in batches.
    func claimDue(now current: Date) async {
        // Stored times come back from the store as seconds since 1970 and are not always the same `Date` to the last
        // bit; a millisecond of slack makes "due now" mean the same in the timer queue and in the store's claim.
        let now = current.addingTimeInterval(0.001)
        while true {
            let room = pool.room
            let due = state.withLock { state -> [PushNotification.ID] in
                guard room > 0, !state.isStopping else { return [] }
                let refill = configuration.dueQueueCapacity - state.due.count
                if refill > 0 {
                    for attempt in state.schedule.popDue(at: now, limit: refill) {
                        state.due.append(attempt.id, device: attempt.deviceID)
                    }
                }
                var ids: [PushNotification.ID] = []
                while ids.count < min(room, 512), let id = state.due.popFirst() { ids.append(id) }
                return ids
            }
            guard !due.isEmpty else { return }
            do {
                let lease = Lease(owner: instanceID, expiresAt: now.addingTimeInterval(configuration.leaseDuration))
                let claimed = try await store.claim(due, lease: lease, at: now)
                pool.enqueue(claimed.map { DeliveryWork(notification: $0) })
            } catch {
                logger.error("Claiming due notifications failed", metadata: ["error": "\(error)"])
                state.withLock { $0.schedule.markStoreHasMore() }
                return
            }
            if due.count < 512 { return }
        }
    }
}
