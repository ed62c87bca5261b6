import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)
private let today = UTCDay(containing: start).description

/// Issue 39, section 7: bounded storage, the same on every backend.
@Suite("Retention contract")
struct RetentionContractTests {
    /// Accepts `notification` leased to "a" and saves it as `status`, last changed at `finishedAt`.
    static func finish(
        _ notification: PushNotification, as status: DeliveryStatus, at finishedAt: Date, in store: any HeraldStore
    ) async throws -> PushNotification {
        _ = try await store.accept(
            notification, quota: QuotaRequest(day: notification.quotaDay ?? today, maximum: nil),
            lease: Lease(owner: "a", expiresAt: finishedAt.addingTimeInterval(3_600)))
        var finished = notification
        finished.status = status
        finished.attempts = 1
        finished.updatedAt = finishedAt
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: finished, releasesQuota: status != .delivered)], owner: "a"))
        return finished
    }

    @Test(arguments: Backend.available)
    func finishedNotificationsPastTheCutoffAreDeletedInBatchesAndPendingOnesNever(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let statuses: [DeliveryStatus] = [.delivered, .failed, .expired, .delivered, .failed]
        var finished: [PushNotification] = []
        for (index, status) in statuses.enumerated() {
            finished.append(try await Self.finish(Fixtures.notification(for: device), as: status, at: start.addingTimeInterval(Double(index)), in: store))
        }
        // Pending a year: never deleted by retention.
        let pending = Fixtures.notification(for: device, at: start.addingTimeInterval(-365 * 86_400))
        _ = try await store.accept(pending, quota: QuotaRequest(day: today, maximum: nil))

        let cutoff = start.addingTimeInterval(2.5)
        if backend == .postgres {
            // PostgreSQL deletes notifications with their day (docs/operations.md, "Retention"): none of a day before the
            // whole day is past the retention (at most a day late), then all of it at once; the pending one's day stays.
            #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 2) == 0)
            #expect(try await store.deleteFinishedNotifications(before: cutoff.addingTimeInterval(86_400), limit: 2) == 5)
            for notification in finished { #expect(try await store.notification(id: notification.id) == nil) }
            #expect(try await store.deleteFinishedNotifications(before: start.addingTimeInterval(1_000_000_000), limit: 100) == 0)
            #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10).map(\.id) == [pending.id])
            try await store.close()
            return
        }
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 2) == 2)
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 2) == 1)
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 2) == 0)
        for (index, notification) in finished.enumerated() {
            #expect((try await store.notification(id: notification.id) == nil) == (index < 3), "notification \(index)")
        }
        #expect(try await store.notification(id: pending.id) == pending)
        #expect(try await store.deleteFinishedNotifications(before: start.addingTimeInterval(1_000_000_000), limit: 100) == 2)
        #expect(try await store.notification(id: pending.id) == pending)
        #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10).map(\.id) == [pending.id])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func idleDevicesAreThoseNotRegisteredSentToOrHeardFromAndGoWithTheirData(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let old = start.addingTimeInterval(-100 * 86_400)
        let idle = Fixtures.device(token: Fixtures.apnsToken(1), at: old).device
        let registered = Fixtures.device(token: Fixtures.apnsToken(2), at: start).device
        let sentTo = Fixtures.device(token: Fixtures.apnsToken(3), at: old).device
        let heardFrom = Fixtures.device(token: Fixtures.apnsToken(4), at: old).device
        for device in [idle, registered, sentTo, heardFrom] { try await store.insertDevice(device) }
        let oldDay = UTCDay(containing: old).description
        let oldNotification = try await Self.finish(
            Fixtures.notification(for: idle, at: old, quotaDay: oldDay), as: .delivered, at: old, in: store)
        _ = try await store.accept(Fixtures.notification(for: sentTo, at: start), quota: QuotaRequest(day: today, maximum: nil))
        try await store.markDevicesSeen([heardFrom.id], at: start)

        let cutoff = start.addingTimeInterval(-30 * 86_400)
        #expect(try await store.idleDeviceCount(since: cutoff, limit: 100) == 1)
        #expect(try await store.idleDeviceCount(since: start.addingTimeInterval(-200 * 86_400), limit: 100) == 0)
        #expect(try await store.deleteIdleDevices(since: cutoff, limit: 100) == [idle.id])
        #expect(try await store.device(id: idle.id) == nil)
        #expect(try await store.notification(id: oldNotification.id) == nil)
        #expect(try await store.quotaCounters(deviceID: idle.id, day: oldDay) == QuotaCounters())
        for device in [registered, sentTo, heardFrom] { #expect(try await store.device(id: device.id) != nil) }
        #expect(try await store.idleDeviceCount(since: cutoff, limit: 100) == 0)
        #expect(try await store.deleteIdleDevices(since: cutoff, limit: 100).isEmpty)
        // Heard from a year later, the others are idle too; counted up to the limit.
        let later = start.addingTimeInterval(365 * 86_400)
        #expect(try await store.idleDeviceCount(since: later.addingTimeInterval(-30 * 86_400), limit: 2) == 2)
        try await store.close()
    }
}

/// The sweeper's idle rule with a test clock: a device heard from (``RetentionSweeper/deviceSeen(_:)``) stays.
@Suite("Retention sweeper")
struct RetentionSweeperTests {
    @Test(arguments: Backend.available)
    func idleDevicesGoAtAPassUnlessHeardFromAndNothingGoesWhenTheOptionIsOff(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let clock = TestClock(start)
        let quiet = Fixtures.device(token: Fixtures.apnsToken(1), at: start).device
        let heard = Fixtures.device(token: Fixtures.apnsToken(2), at: start).device
        for device in [quiet, heard] { try await store.insertDevice(device) }
        let off = RetentionSweeper(store: store, policy: RetentionPolicy(), clock: clock)
        let on = RetentionSweeper(store: store, policy: RetentionPolicy(deviceIdleDays: 2), clock: clock)
        clock.advance(by: 2 * 86_400)
        on.deviceSeen(heard.id)
        #expect(try await on.sweep().devicesDeleted.isEmpty)  // writes the sighting, at day 2; nothing idle for 2 days yet
        clock.advance(by: 86_400 + 60)
        #expect(try await off.sweep().devicesDeleted.isEmpty)
        #expect(try await on.sweep().devicesDeleted == [quiet.id])
        #expect(try await store.device(id: quiet.id) == nil)
        #expect(try await store.device(id: heard.id) != nil)
        clock.advance(by: 86_400)
        #expect(try await on.sweep().devicesDeleted == [heard.id])
        try await store.close()
    }
}

/// The SQLite file stays bounded under a steady load with retention, and shrinks once the load is gone.
@Suite("SQLite retention")
struct SQLiteRetentionTests {
    @Test func theFileStaysBoundedUnderASteadyLoadAndShrinksAfterwards() async throws {
        let store = try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path)
        let clock = TestClock(start)
        let sweeper = RetentionSweeper(
            store: store, policy: RetentionPolicy(retention: 3 * 3_600, batchSize: 100), clock: clock)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var pagesPerRound: [Int] = []
        var kept: [PushNotification.ID] = []
        for round in 0..<12 {
            // 300 notifications of 3,000 bytes (a page each), accepted and delivered in two commits.
            let now = clock.now()
            let fresh = (0..<300).map { _ in
                var notification = Fixtures.notification(for: device, at: now)
                notification.payload = Data(repeating: 0x61, count: 3_000)
                return notification
            }
            let lease = Lease(owner: "a", expiresAt: now.addingTimeInterval(3_600))
            _ = try await store.commit(
                WriteBatch(accepts: fresh.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: today, maximum: nil), lease: lease) }, owner: "a"))
            let outcomes = fresh.map { notification in
                var delivered = notification
                delivered.status = .delivered
                delivered.attempts = 1
                return DeliveryOutcome(notification: delivered)
            }
            _ = try await store.commit(WriteBatch(outcomes: outcomes, owner: "a"))
            // One pending notification per round: none of them is ever deleted.
            let pending = Fixtures.notification(for: device, at: now)
            _ = try await store.accept(pending, quota: QuotaRequest(day: today, maximum: nil))
            kept.append(pending.id)
            let pass = try await sweeper.sweep()
            #expect(pass.notificationsDeleted == (round < 4 ? 0 : 300), "round \(round)")
            pagesPerRound.append(try await store.pageCounts().total)
            clock.advance(by: 3_600)
        }
        // From the fifth round on, every round deletes as much as it adds: the file does not grow.
        let steady = pagesPerRound[5...]
        #expect(steady.max()! <= pagesPerRound[4] + pagesPerRound[4] / 10, "pages per round: \(pagesPerRound)")
        clock.advance(by: 10 * 3_600)
        let last = try await sweeper.sweep()
        #expect(last.notificationsDeleted == 1_200)
        let (total, free) = try await store.pageCounts()
        #expect(total < pagesPerRound.max()! / 2, "pages after the load: \(total) (\(free) free), during: \(pagesPerRound)")
        for id in kept { #expect(try await store.notification(id: id)?.status == .pending) }
        try await store.close()
    }
}
