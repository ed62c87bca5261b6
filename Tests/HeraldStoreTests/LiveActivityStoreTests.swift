import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Store contract: Live Activity pushes")
struct LiveActivityStoreTests {
    static let start = Date(timeIntervalSince1970: 1_763_769_600)

    @Test(arguments: Backend.available)
    func aLiveActivityPushKeepsItsTokenAndTypeThroughAcceptClaimAndRead(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var push = Fixtures.notification(for: device, at: Self.start)
        push.pushType = .liveactivity
        push.liveActivityToken = "a1b2c3d4e5f6"
        let plain = Fixtures.notification(for: device, at: Self.start)
        let quota = QuotaRequest(day: UTCDay(containing: Self.start).description, maximum: nil)
        for notification in [push, plain] { _ = try await store.accept(notification, quota: quota) }
        #expect(try await store.notification(id: push.id) == push)
        #expect(try await store.notification(id: plain.id)?.liveActivityToken == nil)
        let claimed = try await store.claim([push.id], lease: Lease(owner: "a", expiresAt: Self.start.addingTimeInterval(30)), at: Self.start)
        #expect(claimed.map(\.liveActivityToken) == ["a1b2c3d4e5f6"])
        #expect(claimed.map(\.pushType) == [.liveactivity])
        try await store.close()
    }
}
