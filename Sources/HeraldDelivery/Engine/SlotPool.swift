import Foundation
import HeraldCore
import Synchronization

/// A claimed notification in this instance's custody: waiting for a slot, in a slot, or parked until its local
/// channel calls back.
struct DeliveryWork: Sendable {
    var notification: PushNotification
    /// Its device, when the caller already had it (the attempt reads it from the store otherwise).
    var device: Device?
    /// What the local channel said before the attempt was parked: a resumed attempt carries the confirmation.
    var local: LocalAnswer = .notAsked
    /// Claimed as part of a connected device's backlog (``OutboxScheduler/deliverPending(of:)``): its end lets the
    /// next page in.
    var isBacklog = false
    /// When it was claimed: an attempt that parks it after its device was woken since (``OutboxScheduler/deliverPending(of:)``
    /// found it held) claims the device's backlog again.
    var claimedAt = ContinuousClock.now
}

/// Bounded concurrency for delivery attempts, and the custody of what this instance claimed.
///
/// Claimed work waits in one ``FairReadyQueue`` (in turn per device). ``Limits/residentSlots`` slots wait for work
/// all the time; the others (up to ``Limits/maximumSlots``) are started when work finds every slot busy and end when
/// the ready queue is empty, so an idle instance does not hold a task per slot of a large maximum (about 5 KB each).
/// The pool knows what this instance holds (queued, in a slot, or parked awaiting a confirmation) until the attempt
/// ``release(_:)``s it: the scheduler renews those leases and does not schedule those notifications again.
final class SlotPool: Sendable {
    struct Limits: Sendable {
        /// Attempts in slots at once, at most.
        var maximumSlots: Int
        /// Slots that wait for work all the time.
        var residentSlots: Int
        /// Work waiting for a slot beyond which fresh notifications are not leased to the pool.
        var readyLimit: Int
        /// Places in the ready queue one device's fresh notifications may take.
        var readyPerDevice: Int
    }

    private typealias Slot = CheckedContinuation<DeliveryWork?, Never>

    private struct State {
        var ready = FairReadyQueue<DeliveryWork>()
        var idleSlots: [Slot] = []
        /// Slots started on demand and not ended yet (the resident ones are always there).
        var slotsOnDemand = 0
        /// In this instance's custody: waiting for a slot, in a slot, or parked.
        var held: Set<PushNotification.ID> = []
        /// Held notifications claimed again before their attempt released them (see ``takeCustody(_:)``): each is
        /// queued, still held, when that attempt releases it.
        var claimedAgain: [PushNotification.ID: DeliveryWork] = [:]
        var isStopping = false

        /// Takes custody of claimed work: `true` when it was not held; otherwise it waits for its holder's release.
        mutating func take(_ work: DeliveryWork) -> Bool {
            if held.insert(work.notification.id).inserted { return true }
            claimedAgain[work.notification.id] = work
            return false
        }
    }

    let limits: Limits
    private let state = Mutex(State())
    /// One element per slot to start on demand (read by ``run(_:)``, which owns the slots' task group).
    private let slotRequests: AsyncStream<Void>
    private let slotRequestSink: AsyncStream<Void>.Continuation

    init(limits: Limits) {
        self.limits = limits
        (slotRequests, slotRequestSink) = AsyncStream.makeStream(of: Void.self)
    }

    // MARK: Custody

    /// Whether a fresh notification of this device may be leased to the pool now: the pool runs, the ready queue has
    /// room, and the device has fewer than ``Limits/readyPerDevice`` places in it (the rest of its notifications
    /// wait their turn in the timer queue, so other devices' fresh notifications still find room).
    func hasRoomForFresh(of deviceID: Device.ID) -> Bool {
        state.withLock {
            !$0.isStopping && $0.ready.count < limits.readyLimit && $0.ready.count(for: deviceID) < limits.readyPerDevice
        }
    }

    /// Whether the pool takes work (``stop()`` was not called).
    var isRunning: Bool { state.withLock { !$0.isStopping } }

    /// Places left in the ready queue.
    var room: Int { state.withLock { limits.readyLimit - $0.ready.count } }

    /// Whether this instance holds anything (its leases need renewing).
    var holdsAny: Bool { state.withLock { !$0.held.isEmpty } }

    /// The attempts of `attempts` this instance does not hold.
    func notHeld(_ attempts: [ScheduledAttempt]) -> [ScheduledAttempt] {
        state.withLock { state in attempts.filter { !state.held.contains($0.id) } }
    }

    /// Held, and waiting for a slot.
    var counts: (held: Int, waiting: Int) { state.withLock { ($0.held.count, $0.ready.count) } }

    /// Takes custody of claimed work and queues it (work already held waits for its release: ``takeCustody(_:)``).
    func enqueue(_ work: [DeliveryWork]) {
        guard !work.isEmpty else { return }
        start(state.withLock { state in queue(work.filter { state.take($0) }, in: &state) })
    }

    /// Takes custody of claimed work without queuing it: returns the items not held already, to be ``queue(_:)``d
    /// once their count is recorded (a backlog page counts its items before a slot can finish one), and how many
    /// were held.
    ///
    /// A held item was claimed again in the store after its attempt saved its outcome (which gives the lease back)
    /// and before that attempt released it here. The new claim is this instance's lease, so nothing else will take
    /// it until the lease expires: the item is queued when its attempt releases it (``release(_:)``). Skipping it
    /// left such a notification parked until its expiry (a subscriber's backlog, WebSocketTests in a loaded run).
    func takeCustody(_ work: [DeliveryWork]) -> (toQueue: [DeliveryWork], afterRelease: Int) {
        state.withLock { state in
            let taken = work.filter { state.take($0) }
            return (taken, work.count - taken.count)
        }
    }

    /// Queues work already held: a backlog page, or an attempt that goes on (its confirmation came, or its time is up).
    func queue(_ work: [DeliveryWork]) {
        start(state.withLock { queue(work, in: &$0) })
    }

    /// The attempt is over: the notification is no longer held, unless it was claimed again meanwhile. That claim's
    /// work is returned, still held, for the caller to ``queue(_:)`` once it is done with this attempt.
    func release(_ id: PushNotification.ID) -> DeliveryWork? {
        state.withLock { state in
            if let again = state.claimedAgain.removeValue(forKey: id) { return again }
            state.held.remove(id)
            return nil
        }
    }

    // MARK: Slots

    /// Runs the slots until ``stop()``: the resident ones at once, the others on demand. Returns when every slot ended
    /// (busy ones after their attempt).
    func run(_ attempt: @escaping @Sendable (DeliveryWork) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for _ in 0..<limits.residentSlots {
                group.addTask { await self.runSlot(isResident: true, attempt) }
            }
            // Ends when `stop()` finishes the stream.
            for await _ in slotRequests {
                group.addTask { await self.runSlot(isResident: false, attempt) }
            }
        }
    }

    /// Stops taking work: idle slots end, busy ones end after their attempt, no slot starts on demand.
    func stop() {
        let idle = state.withLock { state in
            state.isStopping = true
            defer { state.idleSlots = [] }
            return state.idleSlots
        }
        for slot in idle { slot.resume(returning: nil) }
        slotRequestSink.finish()
    }

    private func runSlot(isResident: Bool, _ attempt: @Sendable (DeliveryWork) async -> Void) async {
        while let work = await nextWork(isResident: isResident) { await attempt(work) }
    }

    /// Hands work to idle slots and queues the rest, counting the slots to start on demand; returns the hand-offs.
    private func queue(_ work: [DeliveryWork], in state: inout State) -> (handOff: [(Slot, DeliveryWork)], slotsToStart: Int) {
        var handOff: [(Slot, DeliveryWork)] = []
        var slotsToStart = 0
        for item in work {
            if let slot = state.idleSlots.popLast() {
                handOff.append((slot, item))
            } else {
                state.ready.append(item, device: item.notification.deviceID)
                if !state.isStopping, limits.residentSlots + state.slotsOnDemand < limits.maximumSlots {
                    state.slotsOnDemand += 1
                    slotsToStart += 1
                }
            }
        }
        return (handOff, slotsToStart)
    }

    /// Makes the hand-offs and requests the slots outside the lock.
    private func start(_ queued: (handOff: [(Slot, DeliveryWork)], slotsToStart: Int)) {
        for (slot, item) in queued.handOff { slot.resume(returning: item) }
        for _ in 0..<queued.slotsToStart {
            if case .terminated = slotRequestSink.yield() {
                state.withLock { $0.slotsOnDemand -= 1 }  // stopping: nothing starts it, and nothing is left to take
            }
        }
    }

    /// The next work for a slot; `nil` when the slot should end: the pool stops, or the slot was started on demand
    /// and the ready queue is empty.
    private func nextWork(isResident: Bool) async -> DeliveryWork? {
        await withCheckedContinuation { (continuation: Slot) in
            let work = state.withLock { state -> DeliveryWork?? in
                if let work = state.ready.popFirst() { return .some(work) }
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
}
