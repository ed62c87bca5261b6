import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// What issue 39 asks of every store (``AfterPushStore``; SQLite v15, PostgreSQL 12): the first answer wins, one event
/// of each kind, the inbox oldest first by id with its answer and read mark, and everything goes with its notification.
@Suite("After-push store contract")
struct AfterPushStoreContractTests {
    /// A device with `count` alert notifications a second apart (time-ordered ids), all accepted.
    private func deviceWithNotifications(
        _ store: any HeraldStore, count: Int, status: DeliveryStatus = .pending
    ) async throws -> (Device, [PushNotification]) {
        let (device, _, _) = Fixtures.device()
        try await store.insertDevice(device)
        var notifications: [PushNotification] = []
        for index in 0..<count {
            let at = start.addingTimeInterval(Double(index))
            var notification = Fixtures.notification(for: device, at: at, title: "N\(index)")
            notification.id = .timeOrdered(at: at)
            notification.status = status
            notification.content = NotificationContent(title: "N\(index)", body: "B\(index)")
            _ = try await store.accept(notification, quota: QuotaRequest(day: UTCDay(containing: at).description, maximum: nil))
            notifications.append(notification)
        }
        return (device, notifications)
    }

    @Test(arguments: Backend.available)
    func theFirstAnswerWinsAndAnswersAreReadByID(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (_, notifications) = try await deviceWithNotifications(store, count: 3)
        let first = NotificationAnswer(notificationID: notifications[0].id, actionID: "ack", text: "on my way", answeredAt: start)
        #expect(try await store.recordAnswer(first) == .recorded)
        let later = NotificationAnswer(notificationID: notifications[0].id, actionID: "ignore", text: nil, answeredAt: start + 5)
        #expect(try await store.recordAnswer(later) == .alreadyAnswered(first))
        let plain = NotificationAnswer(notificationID: notifications[1].id, actionID: "ok", text: nil, answeredAt: start + 1)
        #expect(try await store.recordAnswer(plain) == .recorded)

        let answers = try await store.answers(of: notifications.map(\.id) + [UUID.random()])
        #expect(answers == [notifications[0].id: first, notifications[1].id: plain])
        #expect(try await store.answers(of: []).isEmpty)
        // Racing answers: exactly one is recorded.
        let outcomes = try await withThrowingTaskGroup(of: AnswerRecording.self) { group in
            for index in 0..<6 {
                group.addTask {
                    try await store.recordAnswer(
                        NotificationAnswer(notificationID: notifications[2].id, actionID: "a\(index)", text: nil, answeredAt: start))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .recorded }.count == 1)
        // An answer to a notification that is not there is refused.
        await #expect(throws: (any Error).self) {
            try await store.recordAnswer(NotificationAnswer(notificationID: .random(), actionID: "a", text: nil, answeredAt: start))
        }
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func oneEventOfEachKindIsKeptInTheOrderReported(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (_, notifications) = try await deviceWithNotifications(store, count: 1)
        let id = notifications[0].id
        #expect(try await store.events(of: id).isEmpty)
        try await store.recordEvent(NotificationEvent(event: .delivered, at: start + 1), of: id)
        try await store.recordEvent(NotificationEvent(event: .opened, at: start + 3), of: id)
        try await store.recordEvent(NotificationEvent(event: .delivered, at: start + 9), of: id)  // a repeat: ignored
        try await store.recordEvent(NotificationEvent(event: .read, at: start + 2), of: id)
        #expect(
            try await store.events(of: id) == [
                NotificationEvent(event: .delivered, at: start + 1), NotificationEvent(event: .read, at: start + 2),
                NotificationEvent(event: .opened, at: start + 3),
            ])
        await #expect(throws: (any Error).self) {
            try await store.recordEvent(NotificationEvent(event: .read, at: start), of: .random())
        }
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func theInboxIsADevicesAlertsOldestFirstInPagesWithAnswersAndReadMarks(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (device, notifications) = try await deviceWithNotifications(store, count: 5)
        let (other, _) = try await deviceWithNotifications(store, count: 2)
        // A Live Activity push and a stored (push: false) notification of the same device.
        var live = Fixtures.notification(for: device, at: start + 10)
        live.id = .timeOrdered(at: start + 10)
        live.pushType = .liveactivity
        _ = try await store.accept(live, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))
        var kept = Fixtures.notification(for: device, at: start + 11)
        kept.id = .timeOrdered(at: start + 11)
        kept.status = .stored
        _ = try await store.accept(kept, quota: QuotaRequest(day: UTCDay(containing: start).description, maximum: nil))

        let answer = NotificationAnswer(notificationID: notifications[1].id, actionID: "ack", text: nil, answeredAt: start + 20)
        _ = try await store.recordAnswer(answer)
        try await store.recordEvent(NotificationEvent(event: .read, at: start + 21), of: notifications[2].id)
        try await store.recordEvent(NotificationEvent(event: .opened, at: start + 21), of: notifications[3].id)

        let page1 = try await store.inbox(deviceID: device.id, after: nil, limit: 3)
        #expect(page1.map(\.notification.id) == notifications[0..<3].map(\.id))
        #expect(page1.map(\.answer) == [nil, answer, nil])
        #expect(page1.map(\.isRead) == [false, false, true])
        #expect(page1[0].notification.content?.title == "N0")
        let page2 = try await store.inbox(deviceID: device.id, after: page1.last?.cursor, limit: 3)
        #expect(page2.map(\.notification.id) == notifications[3..<5].map(\.id) + [kept.id])
        #expect(page2.map(\.isRead) == [false, false, false])
        #expect(page2.last?.notification.status == .stored)
        #expect(try await store.inbox(deviceID: device.id, after: page2.last?.cursor, limit: 3).isEmpty)
        #expect(page1.map(\.cursor) == page1.map(\.cursor).sorted())
        #expect(try await store.inbox(deviceID: other.id, after: nil, limit: 10).count == 2)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func answersAndEventsGoWithTheirNotification(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let (device, notifications) = try await deviceWithNotifications(store, count: 1)
        let id = notifications[0].id
        _ = try await store.recordAnswer(NotificationAnswer(notificationID: id, actionID: "ack", text: nil, answeredAt: start))
        try await store.recordEvent(NotificationEvent(event: .read, at: start), of: id)
        try await store.deleteDevice(id: device.id)
        #expect(try await store.answers(of: [id]).isEmpty)
        #expect(try await store.events(of: id).isEmpty)
        try await store.close()
    }
}
