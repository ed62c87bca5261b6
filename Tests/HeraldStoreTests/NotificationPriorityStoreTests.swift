import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Store contract: a notification's priority")
struct NotificationPriorityStoreTests {
    static let start = Date(timeIntervalSince1970: 1_763_769_600)

    /// Every level is kept as its APNs number (the column Herald always had) and comes back as itself from a read and
    /// from a claim; the typed actions of the content come back with it.
    @Test(arguments: Backend.available)
    func everyLevelAndTheTypedActionsComeBack(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let quota = QuotaRequest(day: UTCDay(containing: Self.start).description, maximum: nil)
        var notifications: [PushNotification] = []
        for (index, priority) in NotificationPriority.allCases.enumerated() {
            var notification = Fixtures.notification(for: device, at: Self.start.addingTimeInterval(Double(index)))
            notification.priority = priority
            notification.content = NotificationContent(
                title: "Door",
                actions: [
                    NotificationAction(
                        id: "open", title: "Open", url: "https://ha.local/x", method: .put, headers: ["X-A": "1"], body: "{}",
                        foreground: false, destructive: true, authenticationRequired: false, textInput: .init(placeholder: "Why?")),
                    NotificationAction(id: "ok", title: "OK"),
                ])
            _ = try await store.accept(notification, quota: quota)
            notifications.append(notification)
        }
        for notification in notifications {
            #expect(try await store.notification(id: notification.id) == notification)
        }
        let claimed = try await store.claim(
            notifications.map(\.id), lease: Lease(owner: "a", expiresAt: Self.start.addingTimeInterval(30)), at: Self.start.addingTimeInterval(5))
        #expect(Set(claimed.map(\.priority)) == Set(NotificationPriority.allCases))
        #expect(claimed.allSatisfy { $0.content == notifications[0].content })
        try await store.close()
    }
}
