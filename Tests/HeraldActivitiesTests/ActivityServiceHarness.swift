import Foundation
import HeraldDelivery
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldActivities
@testable import HeraldCore

/// The activity service and its dispatcher on the in-memory store, a ``FakeProvider`` and a ``TestClock``: no socket,
/// no HTTP. The delivery engine runs (its scheduler's ticker set to an hour); each test runs the dispatcher's passes and
/// the scheduler's passes itself.
final class ActivityServiceHarness: Sendable {
    static let pushToStartToken = String(repeating: "ab", count: 32)
    static let updateToken = String(repeating: "cd", count: 32)

    let store = InMemoryStore()
    let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600 + 43_200))  // noon UTC: no quota day ends
    let provider: FakeProvider
    let outcomes = ActivityDeliveryOutcomes()
    let engine: DeliveryEngine
    let pipeline: SendPipeline
    let dispatcher: ActivityDispatcher
    let service: ActivityService
    let recorder = Recorder()
    /// How often the service woke the dispatcher.
    var wakes: Int { recorder.wakes.withLock { $0 } }
    /// The activities the dispatcher told settled, in order.
    var settled: [ActivityKey] { recorder.settled.withLock { $0 } }

    final class Recorder: Sendable {
        let wakes = Mutex(0)
        let settled = Mutex<[ActivityKey]>([])
    }

    init(results: [DeliveryResult] = []) {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        provider = FakeProvider(platform: .apns, results: results)
        engine = DeliveryEngine(
            store: store, providers: [provider], localChannel: nil, clock: clock,
            configuration: .init(
                maximumConcurrentDeliveries: 4, retryPolicy: RetryPolicy(initialDelay: 2, maximumDelay: 600), leaseDuration: 30,
                tick: .seconds(3_600), deliveryWait: .seconds(30), instanceID: "herald-a"),
            logger: logger, outcomeObserver: outcomes)
        pipeline = SendPipeline(
            store: store, engine: engine, clock: clock, configuration: .init(), renderers: PayloadRenderers([:], fallback: RawAPNsRenderer()))
        let recorder = recorder
        dispatcher = ActivityDispatcher(
            store: store, pipeline: pipeline, clock: clock, instanceID: "herald-a",
            settled: { key in recorder.settled.withLock { $0.append(key) } }, logger: logger)
        let dispatcher = dispatcher
        service = ActivityService(
            store: store, clock: clock, logger: logger,
            wake: { keys in
                recorder.wakes.withLock { $0 += 1 }
                dispatcher.wake(keys)
            })
        outcomes.attach(dispatcher)
    }

    /// Runs the engine around `body`.
    func running(_ body: () async throws -> Void) async throws {
        let run = Task { try await engine.run() }
        defer { run.cancel() }
        do {
            try await body()
        } catch {
            run.cancel()
            _ = await run.result
            throw error
        }
        run.cancel()
        _ = await run.result
    }

    /// A device that can be sent push-to-start pushes.
    func device(pushToStart: Bool = true) async throws -> Device {
        var device = Fixtures.device(at: clock.now()).device
        if pushToStart { device.pushToStartToken = Self.pushToStartToken }
        try await store.insertDevice(device)
        return device
    }

    /// `POST /activities`, then a PATCH with `body`, as the controllers call the service.
    @discardableResult
    func create(_ slug: String, name: String, on device: Device, staleTTL: Int? = nil) async throws -> ActivityOutcome {
        try await service.change(.create(ActivityCreateRequest(slug: slug, name: name, staleTTL: staleTTL)), slug: slug, of: device)
    }

    @discardableResult
    func patch(_ slug: String, _ body: String, on device: Device) async throws -> ActivityOutcome {
        let patch = try ActivityRequest.patch(json: Array(body.utf8))
        return try await service.change(.patch(slug: slug, patch, upsert: false), slug: slug, of: device)
    }

    /// The activity "oven" created, started (progress 0.1) and its start pushed; with `reportingToken`, the app's
    /// update token reported after it.
    func startOven(on device: Device, reportingToken: Bool) async throws {
        try await create("oven", name: "Oven", on: device)
        try await patch("oven", #"{"state":"ongoing","content":{"template":"generic","progress":0.1}}"#, on: device)
        await dispatch()
        if reportingToken { try await service.setUpdateToken(Self.updateToken, slug: "oven", of: device) }
    }

    /// The dispatcher's passes until nothing more is due now.
    @discardableResult
    func dispatch() async -> ActivityDispatcher.PassResult {
        var result = await dispatcher.pass()
        while result == .more { result = await dispatcher.pass() }
        return result
    }

    func record(_ slug: String, of device: Device) async throws -> ActivityRecord {
        try #require(try await store.activity(deviceID: device.id, slug: slug))
    }

    /// The `aps` of each push the provider was sent, in order, with the token it went to.
    var pushes: [(aps: JSONObject, token: String?)] {
        provider.sent.compactMap { send in
            guard let aps = (try? JSONValue.decode(send.notification.payload))?.objectValue?["aps"]?.objectValue else { return nil }
            return (aps, send.notification.liveActivityToken)
        }
    }
}

/// The APNs renderer's part the tests need: a Live Activity's raw `apns` payload, sent as it is.
struct RawAPNsRenderer: PayloadRenderer {
    let name = "apns"
    let sizeLimit = 4_096
    func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        RenderedPayload(payload: [:], bodyPath: nil, priority: priority)
    }
}
