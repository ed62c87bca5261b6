import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The contract every `HeraldStore` implementation keeps. Each test runs against every backend: PostgreSQL too when
/// `HERALD_TEST_POSTGRES_URL` names a database (``PostgresTestDatabase``).
enum Backend: String, CustomTestStringConvertible {
    case inMemory
    case sqlite
    case postgres

    /// The backends the contract runs against here.
    static var available: [Backend] { PostgresTestDatabase.url == nil ? [.inMemory, .sqlite] : [.inMemory, .sqlite, .postgres] }

    var testDescription: String { rawValue }

    func makeStore() async throws -> any HeraldStore {
        switch self {
        case .inMemory: InMemoryStore()
        case .sqlite: try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path)
        case .postgres: try await PostgresTestDatabase.makeStore()
        }
    }
}

private let start = Date(timeIntervalSince1970: 1_763_769_600)
private let today = UTCDay(containing: start).description

@Suite("Store contract")
struct StoreContractTests {
    @Test(arguments: Backend.available)
    func findsDevicesByUserIDHashAndID(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (device, userID, _) = Fixtures.device()
        try await store.insertDevice(device)
        #expect(try await store.device(userIDHash: Secrets.hash(userID)) == device)
        #expect(try await store.device(id: device.id) == device)
        #expect(try await store.device(userIDHash: Secrets.hash(Secrets.random256BitHex())) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deactivationOnlyAppliesToTheTokenThatWasUsed(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        var device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        try await store.insertDevice(device)
        device.token = Fixtures.apnsToken(2)
        try await store.updateDevice(device)
        try await store.deactivateDevice(id: device.id, token: Fixtures.apnsToken(1), reason: "Unregistered", at: start)
        #expect(try await store.device(id: device.id)?.isActive == true)
        try await store.deactivateDevice(id: device.id, token: Fixtures.apnsToken(2), reason: "Unregistered", at: start)
        let stored = try #require(try await store.device(id: device.id))
        #expect(stored.isActive == false)
        #expect(stored.inactiveReason == "Unregistered")
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func acceptCountsAgainstTheQuotaAndRefusesPastIt(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let quota = QuotaRequest(day: today, maximum: 2)
        #expect(
            try await store.accept(Fixtures.notification(for: device), quota: quota)
                == .accepted(.init(attempts: 1, successful: 1, total: 1), usedUpQuota: false))
        #expect(
            try await store.accept(Fixtures.notification(for: device), quota: quota)
                == .accepted(.init(attempts: 2, successful: 2, total: 2), usedUpQuota: true))
        let refused = Fixtures.notification(for: device)
        #expect(try await store.accept(refused, quota: quota) == .quotaExceeded(.init(attempts: 3, successful: 2, total: 2)))
        #expect(try await store.notification(id: refused.id) == nil)

        let exempt = Fixtures.notification(for: device)
        #expect(
            try await store.accept(exempt, quota: QuotaRequest(day: today, maximum: nil))
                == .accepted(.init(attempts: 4, successful: 2, total: 2), usedUpQuota: false))
        #expect(try await store.notification(id: exempt.id) == exempt)
        #expect(try await store.quotaCounters(deviceID: device.id, day: "2000-01-01") == QuotaCounters())
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func theQuotaIsAnnouncedUsedUpOnceADayEvenAfterAFailureGaveSomeBack(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let quota = QuotaRequest(day: today, maximum: 1)
        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(30))
        var first = Fixtures.notification(for: device)
        #expect(try await store.accept(first, quota: quota, lease: lease) == .accepted(.init(attempts: 1, successful: 1, total: 1), usedUpQuota: true))
        first.status = .failed
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: first, releasesQuota: true)], owner: "a"))
        #expect(
            try await store.accept(Fixtures.notification(for: device), quota: quota)
                == .accepted(.init(attempts: 2, successful: 1, errors: 1, total: 2), usedUpQuota: false))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func concurrentAcceptsNeitherOverNorUnderCount(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let decisions = try await withThrowingTaskGroup(of: AcceptDecision.self) { group in
            for _ in 0..<40 {
                group.addTask { try await store.accept(Fixtures.notification(for: device), quota: QuotaRequest(day: today, maximum: 15)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let accepted = decisions.filter { if case .accepted = $0 { true } else { false } }
        #expect(accepted.count == 15)
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters(attempts: 40, successful: 15, total: 15))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aBatchAcceptsInOrderAndSavesOutcomesInOneCommit(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(30))
        var earlier = Fixtures.notification(for: device)
        _ = try await store.accept(earlier, quota: QuotaRequest(day: today, maximum: nil), lease: lease)
        earlier.status = .delivered
        earlier.attempts = 1
        earlier.providerMessageID = "apns-1"
        let fresh = (0..<5).map { _ in Fixtures.notification(for: device) }
        let decisions = try await store.commit(
            WriteBatch(
                accepts: fresh.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: today, maximum: 3), lease: lease) },
                outcomes: [DeliveryOutcome(notification: earlier)], owner: "a"))
        #expect(decisions.map { if case .accepted = $0 { true } else { false } } == [true, true, true, false, false])
        #expect(try await store.notification(id: earlier.id) == earlier)
        #expect(try await store.lease(of: earlier.id) == nil)
        #expect(try await store.lease(of: fresh[0].id) == lease)
        #expect(try await store.notification(id: fresh[4].id) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aBatchWithAnAcceptForADeviceThatIsGoneWritesNothing(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (device, gone) = (Fixtures.device().device, Fixtures.device().device)  // `gone` is never stored
        try await store.insertDevice(device)
        let accepts = [device, gone].map {
            AcceptRequest(notification: Fixtures.notification(for: $0), quota: QuotaRequest(day: today, maximum: 5))
        }
        await #expect(throws: (any Error).self) { _ = try await store.commit(WriteBatch(accepts: accepts, owner: "a")) }
        #expect(try await store.notification(id: accepts[0].notification.id) == nil)
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters())
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func anOutcomeIsSavedOnlyByTheLeaseHolderAndReleasesQuotaOnce(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let original = Fixtures.notification(for: device)
        _ = try await store.accept(original, quota: QuotaRequest(day: today, maximum: 5), lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        var failed = original
        failed.status = .failed
        failed.lastError = "BadTopic"
        failed.attempts = 1
        let outcome = DeliveryOutcome(notification: failed, releasesQuota: true)
        _ = try await store.commit(WriteBatch(outcomes: [outcome], owner: "b"))  // not b's lease: ignored
        #expect(try await store.notification(id: original.id) == original)
        _ = try await store.commit(WriteBatch(outcomes: [outcome], owner: "a"))
        _ = try await store.commit(WriteBatch(outcomes: [outcome], owner: "a"))  // the lease is gone: ignored
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters(attempts: 1, successful: 0, errors: 1, total: 1))
        #expect(try await store.notification(id: original.id) == failed)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aDeadTokenOutcomeDeactivatesTheDeviceInTheSameCommit(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(3)).device
        try await store.insertDevice(device)
        #expect(try await store.device(id: device.id)?.isActive == true)  // now cached
        var notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: nil), lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        notification.status = .failed
        notification.lastError = "Unregistered"
        _ = try await store.commit(
            WriteBatch(outcomes: [DeliveryOutcome(notification: notification, releasesQuota: true, deadToken: Fixtures.apnsToken(3))], owner: "a"))
        let stored = try #require(try await store.device(id: device.id))
        #expect(stored.isActive == false)
        #expect(stored.inactiveReason == "Unregistered")
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func claimsTakeWhatIsPendingDueAndHeldByNobody(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let apple = Fixtures.device(token: Fixtures.apnsToken(1)).device
        try await store.insertDevice(apple)
        let quota = QuotaRequest(day: today, maximum: nil)
        let early = Fixtures.notification(for: apple, at: start)
        let later = Fixtures.notification(for: apple, at: start.addingTimeInterval(1))
        let notYet = Fixtures.notification(for: apple, at: start.addingTimeInterval(0.5), nextAttemptAt: start.addingTimeInterval(60))
        var done = Fixtures.notification(for: apple, at: start)
        let heldByB = Fixtures.notification(for: apple, at: start)
        let heldByDead = Fixtures.notification(for: apple, at: start.addingTimeInterval(2))
        for notification in [later, early, notYet] { _ = try await store.accept(notification, quota: quota) }
        _ = try await store.accept(done, quota: quota, lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        done.status = .delivered
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: done)], owner: "a"))
        _ = try await store.accept(heldByB, quota: quota, lease: Lease(owner: "b", expiresAt: start.addingTimeInterval(100)))
        _ = try await store.accept(heldByDead, quota: quota, lease: Lease(owner: "dead", expiresAt: start.addingTimeInterval(5)))

        let now = start.addingTimeInterval(10)
        #expect(try await store.scheduledAttempts(at: now, limit: 10).map(\.id) == [early.id, later.id, heldByDead.id, notYet.id])
        #expect(try await store.scheduledAttempts(at: now, limit: 2).map(\.id) == [early.id, later.id])
        #expect(try await store.scheduledAttempts(at: start, limit: 10).map(\.id).contains(heldByDead.id) == false)

        let lease = Lease(owner: "c", expiresAt: now.addingTimeInterval(30))
        let all = [early, later, notYet, done, heldByB, heldByDead].map(\.id)
        let claimed = try await store.claim(all, lease: lease, at: now)
        #expect(Set(claimed.map(\.id)) == [early.id, later.id, heldByDead.id])
        #expect(try await store.lease(of: heldByDead.id) == lease)
        #expect(try await store.lease(of: heldByB.id)?.owner == "b")
        #expect(try await store.claim(all, lease: Lease(owner: "d", expiresAt: now.addingTimeInterval(30)), at: now).isEmpty)
        #expect(try await store.scheduledAttempts(at: now, limit: 10).map(\.id) == [notYet.id])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func theOutboxDepthCountsPendingAndDueNotificationsUpToTheLimit(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        #expect(try await store.outboxDepth(at: start, limit: 100) == OutboxDepth(pending: 0, due: 0))
        let device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        try await store.insertDevice(device)
        let quota = QuotaRequest(day: today, maximum: nil)
        let due = Fixtures.notification(for: device, at: start)
        let alsoDue = Fixtures.notification(for: device, at: start.addingTimeInterval(1))
        let later = Fixtures.notification(for: device, at: start, nextAttemptAt: start.addingTimeInterval(60))
        let leased = Fixtures.notification(for: device, at: start)
        var delivered = Fixtures.notification(for: device, at: start)
        for notification in [due, alsoDue, later] { _ = try await store.accept(notification, quota: quota) }
        _ = try await store.accept(leased, quota: quota, lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        _ = try await store.accept(delivered, quota: quota, lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
        delivered.status = .delivered
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: delivered)], owner: "a"))

        let now = start.addingTimeInterval(10)
        // Pending: due, alsoDue, later, leased (being attempted). Due now: all but later. Delivered counts nowhere.
        #expect(try await store.outboxDepth(at: now, limit: 100) == OutboxDepth(pending: 4, due: 3))
        #expect(try await store.outboxDepth(at: start.addingTimeInterval(60), limit: 100) == OutboxDepth(pending: 4, due: 4))
        #expect(try await store.outboxDepth(at: now, limit: 2) == OutboxDepth(pending: 2, due: 2))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func leasesAreRenewedReleasedAndClaimedPerDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let other = Fixtures.device(token: Fixtures.apnsToken(2)).device
        try await store.insertDevice(device)
        try await store.insertDevice(other)
        let quota = QuotaRequest(day: today, maximum: nil)
        let first = Fixtures.notification(for: device, at: start)
        let second = Fixtures.notification(for: device, at: start.addingTimeInterval(1), nextAttemptAt: start.addingTimeInterval(3_600))
        let held = Fixtures.notification(for: device, at: start.addingTimeInterval(2))
        let elsewhere = Fixtures.notification(for: other, at: start)
        for notification in [second, first, elsewhere] { _ = try await store.accept(notification, quota: quota) }
        _ = try await store.accept(held, quota: quota, lease: Lease(owner: "b", expiresAt: start.addingTimeInterval(30)))

        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(30))
        #expect(try await store.claimPending(deviceID: device.id, lease: lease, at: start, limit: 10).map(\.id) == [first.id, second.id])
        #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10).map(\.id) == [first.id, second.id, held.id])

        try await store.renewLeases(owner: "a", until: start.addingTimeInterval(90))
        #expect(try await store.lease(of: first.id)?.expiresAt == start.addingTimeInterval(90))
        #expect(try await store.lease(of: held.id)?.expiresAt == start.addingTimeInterval(30))
        try await store.releaseLeases(owner: "a")
        #expect(try await store.lease(of: first.id) == nil)
        #expect(try await store.lease(of: held.id)?.owner == "b")
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func parkedNotificationsAreDueAgainWhenAProviderForTheirPlatformIsThere(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let apple = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let socket = Fixtures.device(platform: .websocket).device
        try await store.insertDevice(apple)
        try await store.insertDevice(socket)
        var parked: [PushNotification] = []
        for device in [apple, socket] {
            var notification = Fixtures.notification(for: device)
            _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: nil), lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(30)))
            notification.nextAttemptAt = notification.expiresAt
            _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: notification, isParked: true)], owner: "a"))
            parked.append(notification)
        }
        let now = start.addingTimeInterval(60)
        #expect(try await store.unpark(platforms: [.apns], at: now) == 1)
        #expect(try await store.notification(id: parked[0].id)?.nextAttemptAt == now)
        #expect(try await store.notification(id: parked[1].id)?.nextAttemptAt == parked[1].expiresAt)
        #expect(try await store.unpark(platforms: [.apns], at: now) == 0)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deletingADeviceRemovesItsNotifications(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: 5))
        try await store.deleteDevice(id: device.id)
        #expect(try await store.device(id: device.id) == nil)
        #expect(try await store.notification(id: notification.id) == nil)
        #expect(await store.readiness() == .ready)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func theDashboardSummariesCountDevicesStatesAndErrors(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        #expect(try await store.deviceTallies() == [])
        #expect(try await store.notificationSummary(since: start, errorLimit: 5) == NotificationSummary())
        let apns = Fixtures.device(token: Fixtures.apnsToken(1)).device
        var dead = Fixtures.device(token: Fixtures.apnsToken(2)).device
        dead.isActive = false
        let socket = Fixtures.device(platform: .websocket).device
        for device in [apns, dead, socket] { try await store.insertDevice(device) }
        #expect(
            try await store.deviceTallies() == [
                DeviceTally(platform: .apns, isActive: true, count: 1), DeviceTally(platform: .apns, isActive: false, count: 1),
                DeviceTally(platform: .websocket, isActive: true, count: 1),
            ])

        // Changed before the window: counted in the outbox depth only. In it: two delivered, one failed with
        // BadDeviceToken, two pending that failed once with a 500 and one pending still untried.
        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(3_600))
        let old = Fixtures.notification(for: apns, at: start.addingTimeInterval(-7_200))
        _ = try await store.accept(old, quota: QuotaRequest(day: today, maximum: nil))
        var outcomes: [DeliveryOutcome] = []
        for (index, (status, error)) in [
            (DeliveryStatus.delivered, nil), (.delivered, nil), (.failed, "BadDeviceToken"), (.pending, "InternalServerError"),
            (.pending, "InternalServerError"), (.pending, nil),
        ].enumerated() {
            var notification = Fixtures.notification(for: apns, at: start.addingTimeInterval(Double(index)))
            _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: nil), lease: lease)
            notification.status = status
            notification.lastError = error
            notification.attempts = status == .pending && error == nil ? 0 : 1
            notification.updatedAt = start.addingTimeInterval(60 + Double(index))
            outcomes.append(DeliveryOutcome(notification: notification))
        }
        _ = try await store.commit(WriteBatch(outcomes: outcomes, owner: "a"))

        let summary = try await store.notificationSummary(since: start, errorLimit: 5)
        #expect(summary.byStatus == [.delivered: 2, .failed: 1, .pending: 3])
        #expect(summary.pending == 4)
        #expect(summary.topErrors == [ErrorTally(error: "InternalServerError", count: 2), ErrorTally(error: "BadDeviceToken", count: 1)])
        #expect(try await store.notificationSummary(since: start, errorLimit: 1).topErrors.count == 1)

        let recent = try await store.recentNotifications(deviceID: nil, limit: 3)
        #expect(recent.map(\.id) == outcomes.reversed().prefix(3).map(\.notification.id))
        #expect(recent.first == outcomes.last?.notification)
        #expect(try await store.recentNotifications(deviceID: socket.id, limit: 10) == [])
        #expect(try await store.recentNotifications(deviceID: apns.id, limit: 10).last?.id == old.id)
        try await store.close()
    }

    /// All devices: by last change. One device: newest accepted first, whatever changed since (an index by last
    /// change per device would be rewritten by every outcome).
    @Test(arguments: Backend.available)
    func recentNotificationsOfADeviceAreOrderedByAcceptance(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device(token: Fixtures.apnsToken(3)).device
        try await store.insertDevice(device)
        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(3_600))
        let first = Fixtures.notification(for: device, at: start)
        let second = Fixtures.notification(for: device, at: start.addingTimeInterval(10))
        for notification in [first, second] {
            _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: nil), lease: lease)
        }
        var delivered = first
        delivered.status = .delivered
        delivered.attempts = 1
        delivered.updatedAt = start.addingTimeInterval(20)
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: delivered)], owner: "a"))

        #expect(try await store.recentNotifications(deviceID: device.id, limit: 10).map(\.id) == [second.id, first.id])
        #expect(try await store.recentNotifications(deviceID: nil, limit: 10).map(\.id) == [first.id, second.id])
        #expect(try await store.recentNotifications(deviceID: device.id, limit: 1).map(\.id) == [second.id])
        try await store.close()
    }
}
