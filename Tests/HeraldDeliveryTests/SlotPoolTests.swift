import Foundation
import HeraldTesting
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// The pool's custody of claimed work, without slots running: what is queued stays in the ready queue.
@Suite("Slot pool custody")
struct SlotPoolTests {
    let pool = SlotPool(limits: .init(maximumSlots: 1, residentSlots: 1, readyLimit: 16, readyPerDevice: 16))
    let notification = Fixtures.notification(for: Fixtures.device().device)

    @Test func aClaimOfAHeldNotificationWaitsForItsReleaseAndIsThenReturnedStillHeld() {
        pool.enqueue([DeliveryWork(notification: notification)])  // an attempt holds it
        #expect(pool.counts == (held: 1, waiting: 1))

        // The scheduler claims it again in the store (its attempt saved its outcome, not yet released).
        pool.enqueue([DeliveryWork(notification: notification)])
        #expect(pool.counts == (held: 1, waiting: 1), "not queued a second time while held")

        let again = pool.release(notification.id)
        #expect(again?.notification.id == notification.id)
        #expect(pool.counts.held == 1, "still held: the claim is this instance's lease")
        #expect(pool.release(notification.id) == nil)
        #expect(pool.counts.held == 0)
    }

    @Test func aBacklogPageCountsTheHeldItemsItWillRunAfterTheirRelease() {
        let other = Fixtures.notification(for: Fixtures.device().device)
        pool.enqueue([DeliveryWork(notification: notification)])
        let (toQueue, afterRelease) = pool.takeCustody([
            DeliveryWork(notification: notification, isBacklog: true), DeliveryWork(notification: other, isBacklog: true),
        ])
        #expect(toQueue.map(\.notification.id) == [other.id])
        #expect(afterRelease == 1)
        #expect(pool.release(notification.id)?.isBacklog == true, "the page's work, not the attempt that ended")
    }

    @Test func aNotificationNobodyClaimedAgainIsSimplyReleased() {
        pool.enqueue([DeliveryWork(notification: notification)])
        #expect(pool.release(notification.id) == nil)
        #expect(pool.counts.held == 0)
    }
}
