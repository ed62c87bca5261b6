import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)  // a UTC midnight
private let day: TimeInterval = 86_400
private let startDay = Int(start.timeIntervalSince1970 / day)

/// Issue 40, section 4: notifications, answers and events partitioned by the day of acceptance (migration 20);
/// retention drops a day whole, never one that holds a pending notification.
@Suite("PostgreSQL store: partitions")
struct PostgresPartitionTests {
    /// A database made by the migrations before 20, with rows in all three tables, keeps them all once migrated: the
    /// same notifications, answers, events and inbox cursors, one partition per day, and retention drops the old days.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aDatabaseOfTheEarlierSchemaMigratesKeepingItsRows() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let device = Fixtures.device().device
        var built: [PushNotification] = []
        for (index, status) in [DeliveryStatus.delivered, .failed, .pending].enumerated() {
            let at = start.addingTimeInterval(Double(index - 2) * day + 3_600)
            var notification = Fixtures.notification(for: device, at: at, title: "N\(index)", quotaDay: UTCDay(containing: at).description)
            notification.status = status
            notification.attempts = status == .pending ? 0 : 1
            notification.lastError = status == .failed ? "BadDeviceToken" : nil
            notification.updatedAt = at.addingTimeInterval(60)
            notification.content = NotificationContent(title: "N\(index)", body: "B")
            built.append(notification)
        }
        let notifications = built
        try await PostgresTestDatabase.withClient(configuration) { client in
            try await PostgresMigrations.migrate(client, through: PostgresMigrations.partitionVersion - 1)
            try await client.query(
                """
                INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active, created_at, updated_at)
                VALUES (\(device.id), \(device.userIDHash), \(device.secretHash), \(device.platform.rawValue),
                    \(device.environment.rawValue), \(device.token), true, \(device.createdAt.timeIntervalSince1970),
                    \(device.updatedAt.timeIntervalSince1970))
                """)
            for notification in notifications {
                try await client.query(
                    """
                    INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status, attempts,
                        last_error, created_at, updated_at, next_attempt_at, expires_at, content)
                    VALUES (\(notification.id), \(notification.deviceID), \(notification.pushType.rawValue), \(notification.priority.apnsValue),
                        \(notification.collapseID), \(notification.payload), \(notification.quotaDay), \(notification.status.rawValue),
                        \(notification.attempts), \(notification.lastError), \(notification.createdAt.timeIntervalSince1970),
                        \(notification.updatedAt.timeIntervalSince1970), \(notification.nextAttemptAt.timeIntervalSince1970),
                        \(notification.expiresAt.timeIntervalSince1970), \(try notification.content?.encoded()))
                    """)
            }
            try await client.query(
                """
                INSERT INTO notification_answer (notification_id, action_id, answer_text, answered_at)
                VALUES (\(notifications[0].id), 'ack', 'fine', \(start.timeIntervalSince1970))
                """)
            try await client.query(
                """
                INSERT INTO notification_event (notification_id, event, reported_at)
                VALUES (\(notifications[0].id), 'read', \(start.timeIntervalSince1970)), (\(notifications[1].id), 'opened', 1)
                """)
        }

        let store = try await PostgresTestDatabase.openStore(configuration)
        #expect(try await store.schemaVersion() == PostgresMigrations.latestVersion)
        #expect(try await store.partitionedDays() == [startDay - 2, startDay - 1, startDay])
        for notification in notifications { #expect(try await store.notification(id: notification.id) == notification) }
        let answer = NotificationAnswer(notificationID: notifications[0].id, actionID: "ack", text: "fine", answeredAt: start)
        #expect(try await store.answers(of: notifications.map(\.id)) == [notifications[0].id: answer])
        #expect(try await store.events(of: notifications[0].id) == [NotificationEvent(event: .read, at: start)])
        #expect(try await store.events(of: notifications[1].id).map(\.event) == [.opened])
        #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10) == [notifications[2]])
        // The inbox keeps its order and cursors; a notification accepted now comes after the migrated ones.
        let fresh = Fixtures.notification(for: device, at: start.addingTimeInterval(7_200))
        _ = try await store.accept(fresh, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))
        let inbox = try await store.inbox(deviceID: device.id, after: nil, limit: 10)
        #expect(inbox.map(\.notification.id) == notifications.map(\.id) + [fresh.id])
        #expect(inbox.map(\.cursor) == inbox.map(\.cursor).sorted())
        #expect(inbox[0].answer == answer && inbox[0].isRead)

        // The two finished days go whole, with their answers and events; the pending notification's day stays.
        #expect(try await store.deleteFinishedNotifications(before: start, limit: 100) == 2)
        #expect(try await store.partitionedDays() == [startDay])
        #expect(try await store.notification(id: notifications[0].id) == nil)
        #expect(try await store.answers(of: [notifications[0].id]).isEmpty)
        #expect(try await store.events(of: notifications[0].id).isEmpty)
        #expect(try await store.notification(id: notifications[2].id) == notifications[2])
        try await store.close()
    }

    /// A day past the retention that still holds a pending notification is not dropped: its finished notifications
    /// are deleted as rows, the pending one stays, and the day goes whole once that one finished a retention ago.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aDayIsNeverDroppedWithAPendingNotification() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        // Day 0: two delivered (one answered, one read) and one pending; day 1: two delivered.
        var finished: [PushNotification] = []
        for at in [start, start.addingTimeInterval(60), start + day, start + day + 60] {
            finished.append(try await RetentionContractTests.finish(Fixtures.notification(for: device, at: at), as: .delivered, at: at + 10, in: store))
        }
        let pending = Fixtures.notification(for: device, at: start.addingTimeInterval(120))
        _ = try await store.accept(pending, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))
        _ = try await store.recordAnswer(NotificationAnswer(notificationID: finished[0].id, actionID: "ack", text: nil, answeredAt: start + 20))
        try await store.recordEvent(NotificationEvent(event: .read, at: start + 20), of: finished[1].id)
        #expect(try await store.partitionedDays() == [startDay, startDay + 1])

        // Three days later both days are past the retention of a day: day 1 goes whole, day 0 keeps its pending one.
        let cutoff = start + 3 * day
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 100) == 2)
        #expect(try await store.partitionedDays() == [startDay])
        // Day 0's finished notifications, a day past the retention, as rows.
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 100) == 2)
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 100) == 0)
        #expect(store.rowDeletions.total == 2)
        #expect(try await store.partitionedDays() == [startDay])
        for notification in finished { #expect(try await store.notification(id: notification.id) == nil) }
        #expect(try await store.answers(of: [finished[0].id]).isEmpty)
        #expect(try await store.events(of: finished[1].id).isEmpty)
        #expect(try await store.notification(id: pending.id) == pending)
        #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10) == [pending])

        // Delivered at day 3, it is kept a retention more; then day 0 goes whole.
        let claimed = try await store.claim([pending.id], lease: Lease(owner: "a", expiresAt: cutoff + 3_600), at: cutoff)
        #expect(claimed.map(\.id) == [pending.id])
        var delivered = pending
        delivered.status = .delivered
        delivered.attempts = 1
        delivered.updatedAt = cutoff
        _ = try await store.commit(WriteBatch(outcomes: [DeliveryOutcome(notification: delivered)], owner: "a"))
        #expect(try await store.deleteFinishedNotifications(before: cutoff, limit: 100) == 0)
        #expect(try await store.partitionedDays() == [startDay])
        #expect(try await store.deleteFinishedNotifications(before: cutoff + 60, limit: 100) == 1)
        #expect(try await store.partitionedDays() == [])
        #expect(try await store.notification(id: pending.id) == nil)
        // Accepting on a dropped day again makes its partitions again.
        let late = Fixtures.notification(for: device, at: start.addingTimeInterval(30))
        _ = try await store.accept(late, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))
        #expect(try await store.notification(id: late.id) == late)
        try await store.close()
    }

    /// Under a steady load (800 notifications a day, delivered at once) with a retention of one day, the tables stop
    /// growing: from the third day on, a day's partitions are dropped as the next day's are made, so the partitions, the
    /// rows and the bytes of the three tables stay within what they were by the third day, over ten days (a test
    /// clock; no vacuum), and no notification is deleted as a row (no dead rows) but those of the day that the first
    /// round's pending notification keeps; that one is kept.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aSteadyLoadWithAShortRetentionStaysWithinABound() async throws {
        let store = try await PostgresTestDatabase.makeStore()
        let clock = TestClock(start)
        let sweeper = RetentionSweeper(store: store, policy: RetentionPolicy(retention: day, batchSize: 500), clock: clock)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let pending = Fixtures.notification(for: device, at: start, ttl: 365 * day)
        _ = try await store.accept(pending, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))
        var bytes: [Int] = []
        var rows: [Int] = []
        var partitions: [Int] = []
        for _ in 0..<40 {  // ten days, a round every six hours
            let now = clock.now()
            let quotaDay = UTCDay(containing: now).description
            let fresh = (0..<200).map { _ in
                var notification = Fixtures.notification(for: device, at: now, quotaDay: quotaDay)
                notification.payload = Data(repeating: 0x61, count: 1_000)
                return notification
            }
            let lease = Lease(owner: "a", expiresAt: now.addingTimeInterval(3_600))
            _ = try await store.commit(
                WriteBatch(
                    accepts: fresh.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: quotaDay, maximum: nil), lease: lease) },
                    owner: "a"))
            let outcomes = fresh.map { notification in
                var delivered = notification
                delivered.status = .delivered
                delivered.attempts = 1
                return DeliveryOutcome(notification: delivered)
            }
            _ = try await store.commit(WriteBatch(outcomes: outcomes, owner: "a"))
            try await sweeper.sweep()
            bytes.append(
                try await store.read(
                    """
                    SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
                    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
                        AND c.relname ~ '^notification(_answer|_event)?(_d-?[0-9]+)?$'
                    """
                ).first?.decode(Int.self) ?? 0)
            rows.append(try await store.read("SELECT count(*) FROM notification").first?.decode(Int.self) ?? 0)
            partitions.append(try await store.partitionedDays().count)
            clock.advance(by: day / 4)
        }
        print("PostgreSQL steady load, retention 1 day: partitions \(partitions.max()!), rows at most \(rows[12...].max()!), bytes \(bytes)")
        // Day 0 (the pending notification) and at most the two days within the retention.
        #expect(partitions.max()! <= 3, "partitions per round: \(partitions)")
        #expect(rows[12...].max()! <= 2 * 800 + 1, "rows per round: \(rows)")
        let settled = bytes[8..<12].max()!  // the third day's
        #expect(bytes[12...].max()! <= settled + settled / 10, "bytes per round: \(bytes)")
        #expect(try await store.notification(id: pending.id) == pending)
        // Nothing was deleted as a row but day 0's 800 finished notifications, whose day the pending one keeps.
        #expect(store.rowDeletions.total == 800)
        try await store.close()
    }
}
