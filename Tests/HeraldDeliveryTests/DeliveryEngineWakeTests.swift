import Foundation
import Synchronization
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// A device woken (it registered again, a client subscribed) while an attempt that read it before holds one of its
/// notifications: the wake's claim passes that notification over (it is leased), the attempt then parks it, and it
/// must still go out through what woke the device, not wait for its expiry. The race is laid out by hand, step by
/// step, with the engine's own pieces: no timing decides it.
extension DeliveryEngineUnitTests {
    @Test func aNotificationParkedByAnAttemptThatPredatesTheWakeIsClaimedAgain() async throws {
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register(.websocket)  // no provider, no client yet: its notification parks
            let (notification, route) = try await accept(engine, for: device, ttl: 3_600)
            #expect(route == .parked)

            // An attempt claims it (as the outbox refill does) and reads the device: nothing can deliver to it.
            let now = clock.now()
            let claimed = try await store.claimPending(
                deviceID: device.id, lease: Lease(owner: "herald-a", expiresAt: now.addingTimeInterval(30)), at: now,
                limit: 10)
            #expect(claimed.map(\.id) == [notification.id])
            let attempt = DeliveryWork(notification: try #require(claimed.first), device: device, claimedAt: .now)

            // Meanwhile a client subscribes: the wake's claim finds the notification held and passes it over.
            channel.connect(device.id, client: .nonConfirming)
            await engine.deliverPending(of: device.id)
            #expect(channel.offered.isEmpty, "held by the attempt: the wake claimed nothing")

            // The attempt ends parked (until its expiry, an hour away) and gives its lease back.
            var parked = try await stored(notification.id)
            parked.nextAttemptAt = parked.expiresAt
            try await store.releaseLeases(owner: "herald-a")
            engine.scheduler.attemptEnded(attempt, report: AttemptReport(notification: parked, verdict: .parked))

            // Claimed again at once, through the client that woke the device; the clock has not moved.
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
            #expect(channel.offered.map(\.id) == [notification.id], "offered once, after the attempt ended")
        }
    }

    @Test func anAttemptClaimedAfterTheWakeThatParksIsNotClaimedAgain() async throws {
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register(.websocket)
            await engine.deliverPending(of: device.id)  // woken while it had nothing pending: nothing to claim
            let (notification, route) = try await accept(engine, for: device, ttl: 3_600)
            #expect(route == .parked)

            let now = clock.now()
            let claimed = try await store.claimPending(
                deviceID: device.id, lease: Lease(owner: "herald-a", expiresAt: now.addingTimeInterval(30)), at: now,
                limit: 10)
            let attempt = DeliveryWork(notification: try #require(claimed.first), device: device, claimedAt: .now)
            var parked = try await stored(notification.id)
            parked.nextAttemptAt = parked.expiresAt
            try await store.releaseLeases(owner: "herald-a")
            channel.connect(device.id, client: .nonConfirming)  // connected after, but no wake: nothing claims it
            engine.scheduler.attemptEnded(attempt, report: AttemptReport(notification: parked, verdict: .parked))

            // The attempt read the device after the last wake: parking was right then, and it waits for its expiry or
            // the next wake. A wake now claims it.
            #expect(await eventually { engine.load.scheduled == 1 })
            #expect(channel.offered.isEmpty, "no claim without a wake after the attempt began")
            await engine.deliverPending(of: device.id)
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
            #expect(channel.offered.map(\.id) == [notification.id])
        }
    }

    /// The other order: the attempt saved its outcome (which gives the lease back) but has not released the
    /// notification yet when the wake's claim takes it in the store. That claim is this instance's lease, so the
    /// notification must go out once the attempt lets go of it; it was left leased and parked (a loaded full run:
    /// WebSocketTests' queued delivery).
    @Test func aNotificationClaimedByAWakeWhileItsAttemptEndsGoesOutWhenTheAttemptReleasesIt() async throws {
        let gate = OutcomeGate()
        let engine = makeEngine(outcomeObserver: gate)
        try await running(engine) {
            let device = try await register(.websocket)
            let (notification, route) = try await accept(engine, for: device, ttl: 3_600)
            #expect(route == .parked)

            // The outbox refill finds it due; its attempt parks it (nothing can deliver to the device), saves that, and
            // is held between the save and the release.
            await engine.scheduler.pass(now: clock.now(), refilling: true)
            #expect(await eventually { gate.entered.withLock { $0 } == 1 })
            #expect(try await store.lease(of: notification.id) == nil, "the parked outcome gave the lease back")

            // A client subscribes now: the wake claims the notification in the store while the attempt still holds it.
            channel.connect(device.id, client: .nonConfirming)
            await engine.deliverPending(of: device.id)
            #expect(try await store.lease(of: notification.id)?.owner == "herald-a")
            #expect(channel.offered.isEmpty, "not offered while the ending attempt holds it")

            gate.open()
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
            #expect(channel.offered.map(\.id) == [notification.id], "offered once, after the attempt released it")
        }
    }
}

/// Stops every attempt between its saved outcome and its end until ``open()`` is called.
private final class OutcomeGate: DeliveryOutcomeObserver {
    let entered = Mutex(0)
    private let opened: AsyncStream<Void>
    private let opener: AsyncStream<Void>.Continuation

    init() { (opened, opener) = AsyncStream.makeStream(of: Void.self) }

    func open() { opener.finish() }

    func outcomeSaved(_ notification: PushNotification, verdict: AttemptVerdict) async {
        entered.withLock { $0 += 1 }
        for await _ in opened {}
    }
}
