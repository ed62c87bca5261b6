import Foundation
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldCore

/// The send pipeline's refusals that come before the store (issue 28, item 5).
@Suite("Send pipeline")
struct SendPipelineTests {
    /// Renders the dialect's own keys as they are.
    struct DataRenderer: PayloadRenderer {
        let name = "data"
        let sizeLimit = 4_096
        func renderContent(_ content: NotificationContent, priority: Int, collapseID: String?) -> RenderedPayload {
            RenderedPayload(payload: content.data, bodyPath: nil, priority: priority)
        }
    }

    /// A value JSON cannot hold (a NaN) is `payloadNotEncodable`, not "store unavailable", and nothing is stored.
    @Test func aPayloadThatCannotBeEncodedIsNotAStoreFailureAndIsNotStored() async throws {
        let store = InMemoryStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600))
        let device = Fixtures.device(at: clock.now()).device
        try await store.insertDevice(device)
        let engine = DeliveryEngine(
            store: store, providers: [FakeProvider(platform: .apns)], localChannel: nil, clock: clock, configuration: .init(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let pipeline = SendPipeline(
            store: store, engine: engine, clock: clock, configuration: .init(),
            renderers: PayloadRenderers([:], fallback: DataRenderer()))

        let draft = NotificationDraft(content: NotificationContent(title: "T", body: "B", data: ["reading": .double(.nan)]))
        await #expect {
            _ = try await pipeline.send(draft, to: device)
        } throws: { error in
            guard case .payloadNotEncodable = error as? SendError else { return false }
            return true
        }
        #expect(try await store.pendingNotifications(deviceID: device.id, limit: 10).isEmpty)
    }
}
