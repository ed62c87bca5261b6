import Foundation
import Logging
import Synchronization

/// The scheduler: the ticker, lease renewal, refills of the timer queue from the store, and claims of what is due.

extension DeliveryWorker {
    /// Wakes the scheduler every tick (it sleeps until the next wake-up or tick) and answers send requests whose
    /// delivery wait is over.
    func runTicker() async {
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

    func runScheduler() async {
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

    func renewLeases(now: Date) async {
        guard state.withLock({ !$0.held.isEmpty }) else { return }
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
            state.withLock { state in
                state.schedule.refill(with: attempts.filter { !state.held.contains($0.id) }, complete: attempts.count < limit)
            }
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
}
