import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Store contract: a notification's content")
struct NotificationContentStoreTests {
    static let start = Date(timeIntervalSince1970: 1_763_769_600)

    /// The content and the renderer of the payload come back from every read, so that a provider can render the
    /// notification again; a row without them (stored before Herald kept them) reads back without them.
    @Test(arguments: Backend.available)
    func theContentAndTheRendererComeBackFromAcceptClaimAndRead(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var rendered = Fixtures.notification(for: device, at: Self.start)
        rendered.renderedBy = "apns"
        rendered.content = NotificationContent(
            title: "Door", body: "Opened", sound: .named("bell.caf"), level: .critical, thread: "doors", hasMedia: true,
            actions: [NotificationAction(id: "ok", title: "OK")], data: ["snapshot": ["type": "live"]],
            providerPayloads: ["fcm": .init(payload: ["data": ["message": "Opened"]], bodyPath: ["data", "message"])])
        let bare = Fixtures.notification(for: device, at: Self.start.addingTimeInterval(1))
        let quota = QuotaRequest(day: UTCDay(containing: Self.start).description, maximum: nil)
        for notification in [rendered, bare] { _ = try await store.accept(notification, quota: quota) }

        #expect(try await store.notification(id: rendered.id) == rendered)
        let read = try await store.notification(id: bare.id)
        #expect(read?.content == nil)
        #expect(read?.renderedBy == nil)
        let claimed = try await store.claim(
            [rendered.id], lease: Lease(owner: "a", expiresAt: Self.start.addingTimeInterval(30)), at: Self.start)
        #expect(claimed.map(\.content) == [rendered.content])
        #expect(claimed.map(\.renderedBy) == ["apns"])
        try await store.close()
    }
}
