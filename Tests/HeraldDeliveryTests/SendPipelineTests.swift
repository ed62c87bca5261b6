import Foundation
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// The send pipeline's refusals that come before the store (issue 28, item 5).
@Suite("Send pipeline")
struct SendPipelineTests {
    /// Renders the dialect's own keys as they are.
    struct DataRenderer: PayloadRenderer {
        let name = "data"
        let sizeLimit = 4_096
        func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
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

    /// A send the provider refuses (or calls a dead token) after it was accepted answers with the quota as the refusal
    /// left it: counted as an error, its place given back. The dialect's `RateLimit-*` headers come from it; nothing
    /// reads the store again (issue 38, item 4).
    @Test(arguments: [DeliveryResult.failed(reason: "BadDeviceToken"), .deadToken(reason: "Unregistered")])
    func aRefusalAfterTheAcceptCarriesTheQuotaItLeft(_ result: DeliveryResult) async throws {
        let store = InMemoryStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600 + 43_200))
        let device = Fixtures.device(at: clock.now()).device
        try await store.insertDevice(device)
        let provider = FakeProvider(platform: .apns)
        provider.script(result)
        let engine = DeliveryEngine(
            store: store, providers: [provider], localChannel: nil, clock: clock,
            configuration: .init(deliveryWait: .seconds(300)),  // the first attempt's verdict, however loaded the machine
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let pipeline = SendPipeline(
            store: store, engine: engine, clock: clock, configuration: .init(dailyLimit: 150),
            renderers: PayloadRenderers([:], fallback: DataRenderer()))
        let run = Task { try await engine.run() }
        defer { run.cancel() }

        let draft = NotificationDraft(content: NotificationContent(title: "T", body: "B"))
        var carried: QuotaStatus?
        do {
            _ = try await pipeline.send(draft, to: device)
        } catch {
            switch error {
            case .rejectedByProvider(_, _, let quota), .deadTokenDetected(_, _, let quota): carried = quota
            default: Issue.record("unexpected \(error)")
            }
        }
        let quota = try #require(carried, "the send was refused after its accept")
        #expect(quota.counters.successful == 0 && quota.counters.errors == 1 && quota.counters.attempts == 1)
        #expect(quota.maximum == 150 && quota.remaining == 150)
        let stored = try await store.quotaCounters(deviceID: device.id, day: UTCDay(containing: clock.now()).description)
        #expect(stored.successful == quota.counters.successful && stored.errors == quota.counters.errors)
    }
}
