import Foundation
import Logging
import Synchronization

/// The slot pool: claimed work waits in the fair ready queue; resident slots wait for it, more start on demand.

extension DeliveryWorker {
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
    func resume(_ work: Work) {
        startSlots(state.withLock { queue([work], in: &$0) })
    }

    /// Hands work to idle slots, queues the rest and asks for slots on demand; returns the hand-offs to make.
    func queue(_ work: [Work], in state: inout State) -> [(CheckedContinuation<Work?, Never>, Work)] {
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

    func startSlots(_ handOff: [(CheckedContinuation<Work?, Never>, Work)]) {
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
    func nextWork(isResident: Bool) async -> Work? {
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

    func runSlot(isResident: Bool) async {
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
    func answerWaiter(with report: AttemptReport) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: report.notification.id) }
        waiter?.continuation.resume(returning: report)
    }
}
