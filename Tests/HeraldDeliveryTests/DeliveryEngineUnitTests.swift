import Foundation
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// The delivery engine without a server or a socket: the in-memory store, a fake provider, a fake local channel and
/// a test clock. The scheduler's ticker is set to an hour: each test runs the scheduler's passes itself.
@Suite("Delivery engine, unit")
struct DeliveryEngineUnitTests {
    let store = InMemoryStore()
    let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600 + 43_200))  // noon UTC: no quota day ends
    let provider = FakeProvider(platform: .apns)
    let channel = FakeLocalChannel()

    func makeEngine(
        slots: Int = 8, deliveryWait: Duration = .seconds(5), outcomeObserver: (any DeliveryOutcomeObserver)? = nil
    ) -> DeliveryEngine {
        DeliveryEngine(
            store: store, providers: [provider], localChannel: channel, clock: clock,
            configuration: .init(
                maximumConcurrentDeliveries: slots, retryPolicy: RetryPolicy(initialDelay: 2, maximumDelay: 600),
                leaseDuration: 30,
                tick: .seconds(3_600), deliveryWait: deliveryWait, instanceID: "herald-a"),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), outcomeObserver: outcomeObserver)
    }

    /// Runs the engine (its slots, its scheduler) around `body`.
    func running(_ engine: DeliveryEngine, _ body: () async throws -> Void) async throws {
        let run = Task { try await engine.run() }
        do {
            try await body()
        } catch {
            run.cancel()
            _ = await run.result
            throw error
        }
        run.cancel()
        _ = await run.result  // slots end, leases are given back
    }

    func register(_ platform: Platform = .apns) async throws -> Device {
        let device = Fixtures.device(platform: platform, at: clock.now()).device
        try await store.insertDevice(device)
        return device
    }

    func accept(_ engine: DeliveryEngine, for device: Device, ttl: TimeInterval = 86_400, starting: Bool = false) async throws
        -> (PushNotification, AcceptRoute)
    {
        let notification = Fixtures.notification(for: device, at: clock.now(), ttl: ttl)
        let quota = QuotaRequest(day: UTCDay(containing: clock.now()).description, maximum: 150)
        let (decision, route) = try await engine.accept(notification, quota: quota, for: device, startingDelivery: starting)
        guard case .accepted = decision else { throw StoreError.notFound("accepted notification") }
        return (notification, route)
    }

    /// Accepts and delivers, as the send pipeline does.
    func send(_ engine: DeliveryEngine, to device: Device) async throws -> (PushNotification, AttemptReport?) {
        let (notification, route) = try await accept(engine, for: device)
        #expect(route == .leased)
        return (notification, await engine.deliver(notification, device: device))
    }

    func stored(_ id: PushNotification.ID) async throws -> PushNotification {
        try #require(try await store.notification(id: id))
    }

    @Test func aFreshNotificationIsStoredLeasedToThisInstanceUntilDeliveryIsSaturated() async throws {
        let engine = makeEngine(slots: 1)  // not running: what is started stays in the ready queue
        let device = try await register()
        let (first, route) = try await accept(engine, for: device, starting: true)
        #expect(route == .leased)
        #expect(try await store.lease(of: first.id)?.owner == "herald-a", "leased by the accept's own transaction")
        let (second, secondRoute) = try await accept(engine, for: device, starting: true)
        #expect(secondRoute == .scheduled, "one place per device in the ready queue of a single slot")
        #expect(try await store.lease(of: second.id) == nil)
        #expect(engine.load == DeliveryLoad(slots: 1, inFlight: 0, waiting: 1, scheduled: 1))
    }

    @Test func aDeliveredSendIsAnsweredWithTheProvidersVerdict() async throws {
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register()
            let (notification, report) = try await send(engine, to: device)
            #expect(report?.verdict == .delivered)
            #expect(provider.sent.map(\.notification.id) == [notification.id])
            #expect(provider.sent.first?.notification.attempts == 1)
            #expect(try await engine.notification(id: notification.id)?.status == .delivered)
        }
    }

    @Test func aTransientFailureIsRetriedAfterItsBackOffAndNotBefore() async throws {
        provider.script(.retry(reason: "503 Service Unavailable", after: nil))
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register()
            let (notification, report) = try await send(engine, to: device)
            #expect(report?.verdict == .willRetry)
            let due = try #require(report?.notification.nextAttemptAt)
            #expect(due >= clock.now().addingTimeInterval(1) && due <= clock.now().addingTimeInterval(2), "2 s with jitter")
            #expect(engine.load.scheduled == 1)

            await engine.scheduler.pass(now: clock.now())
            try await Task.sleep(for: .milliseconds(50))
            #expect(provider.sent.count == 1, "not due yet")

            clock.advance(by: 2)
            await engine.scheduler.pass(now: clock.now())
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
            #expect(provider.sent.map(\.notification.attempts) == [1, 2])
            #expect(try await stored(notification.id).attempts == 2)
        }
    }

    @Test func aDeadTokenFailsTheSendAndDeactivatesTheDevice() async throws {
        provider.script(.deadToken(reason: "Unregistered"))
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register()
            let (notification, report) = try await send(engine, to: device)
            #expect(report?.verdict == .deadToken(reason: "Unregistered"))
            #expect(try await stored(notification.id).status == .failed)
            let after = try #require(try await store.device(id: device.id))
            #expect(!after.isActive)
            #expect(after.inactiveReason == "Unregistered")
        }
    }

    @Test func anAttemptWhoseLeaseWasTakenOverByAnotherInstanceSavesNothing() async throws {
        provider.hold()
        let engine = makeEngine(deliveryWait: .zero)
        try await running(engine) {
            let device = try await register()
            let (notification, _) = try await send(engine, to: device)
            #expect(await eventually { provider.heldCount == 1 })
            // The lease expired (this instance stalled) and another instance claimed the notification.
            clock.advance(by: 31)
            let other = Lease(owner: "herald-b", expiresAt: clock.now().addingTimeInterval(30))
            let taken = try await store.claim([notification.id], lease: other, at: clock.now())
            #expect(taken.map(\.id) == [notification.id])

            provider.release()
            #expect(await eventually { engine.load.inFlight == 0 })
            let after = try #require(try await engine.notification(id: notification.id))
            #expect(after.status == .pending, "the outcome of a lost lease is not saved")
            #expect(try await store.lease(of: notification.id)?.owner == "herald-b")
        }
    }

    @Test func theSchedulerRenewsTheLeasesOfWhatThisInstanceHolds() async throws {
        provider.hold()
        let engine = makeEngine(deliveryWait: .zero)
        try await running(engine) {
            let device = try await register()
            let (notification, _) = try await send(engine, to: device)
            #expect(await eventually { provider.heldCount == 1 })
            clock.advance(by: 20)
            await engine.scheduler.renewLeases(now: clock.now())
            #expect(
                try await store.lease(of: notification.id)
                    == Lease(owner: "herald-a", expiresAt: clock.now().addingTimeInterval(30)))
            provider.release()
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
        }
    }

    @Test func aParkedConfirmationHoldsNoSlotAndEndsDeliveredWithoutTheProvider() async throws {
        let engine = makeEngine(slots: 1, deliveryWait: .zero)
        try await running(engine) {
            let connected = try await register()
            channel.connect(connected.id, client: .confirming)
            let (parked, _) = try await send(engine, to: connected)
            #expect(await eventually { channel.awaitingConfirmation == [parked.id] })

            // The only slot is free while the client has not confirmed: another device's notification goes through.
            let other = try await register()
            let (next, _) = try await send(engine, to: other)
            #expect(await eventually { (try? await engine.notification(id: next.id)?.status) == .delivered })
            #expect(try await store.lease(of: parked.id)?.owner == "herald-a", "still held while parked")

            channel.confirm(parked.id)
            #expect(await eventually { (try? await engine.notification(id: parked.id)?.status) == .delivered })
            #expect(provider.sent.map(\.notification.id) == [next.id], "a confirmed notification never goes to the provider")
            #expect(try await stored(parked.id).attempts == 1)
        }
    }

    @Test func anUnconfirmedOfferFallsBackToTheProviderUnderTheSameLease() async throws {
        let engine = makeEngine(deliveryWait: .zero)
        try await running(engine) {
            let device = try await register()
            channel.connect(device.id, client: .confirming)
            let (notification, _) = try await send(engine, to: device)
            #expect(await eventually { channel.awaitingConfirmation == [notification.id] })
            let elsewhere = Lease(owner: "herald-b", expiresAt: clock.now().addingTimeInterval(30))
            #expect(
                try await store.claim([notification.id], lease: elsewhere, at: clock.now()).isEmpty, "nobody else can claim it")
            #expect(provider.sent.isEmpty)

            channel.expire(notification.id)
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .delivered })
            #expect(provider.sent.map(\.notification.id) == [notification.id])
            #expect(channel.offered.map(\.id) == [notification.id], "offered once")
        }
    }

    @Test func aParkedNotificationExpiresAtItsTimeToLiveAndGivesItsQuotaBack() async throws {
        let engine = makeEngine()
        try await running(engine) {
            let device = try await register(.websocket)  // no provider, no client
            let (notification, route) = try await accept(engine, for: device, ttl: 60)
            #expect(route == .parked)
            await engine.scheduler.pass(now: clock.now())
            #expect(await eventually { engine.load.scheduled == 1 && engine.load.inFlight == 0 })
            let parked = try #require(try await engine.notification(id: notification.id))
            #expect(parked.status == .pending)
            #expect(parked.nextAttemptAt == notification.expiresAt, "parked until its expiry")

            clock.advance(by: 61)
            await engine.scheduler.pass(now: clock.now())
            #expect(await eventually { (try? await engine.notification(id: notification.id)?.status) == .expired })
            let quota = try await store.quotaCounters(deviceID: device.id, day: UTCDay(containing: clock.now()).description)
            #expect(quota.errors == 1 && quota.successful == 0)
            #expect(provider.sent.isEmpty && channel.offered.isEmpty)
        }
    }
}
