import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import ServiceLifecycle

/// The request context of every Herald route.
public typealias HeraldRequestContext = BasicRequestContext

/// The composition root: opens the store, builds the providers, the delivery worker and the routes.
/// `herald serve` and the tests both call it.
///
/// ```swift
/// let app = try await buildApplication(try ConfigurationLoader.load(file: nil, environment: ProcessInfo.processInfo.environment))
/// try await app.runService()
/// ```
public func buildApplication(
    _ configuration: HeraldConfiguration, clock: any WallClock = SystemClock(), logger: Logger? = nil
) async throws -> some ApplicationProtocol {
    let logger = logger ?? {
        var logger = Logger(label: "herald")
        logger.logLevel = configuration.logLevel
        return logger
    }()
    let store = try StoreFactory.open(configuration.databaseURL)
    let providers: [any PushProvider] = []
    let closers: [any Service] = [StoreCloser(store: store)]
    if let apns = configuration.apns {
        _ = apns
        throw ConfigurationError("APNs is not wired yet")
    } else {
        logger.notice("APNs is not configured (HERALD_APNS_KEY_PATH etc.): notifications for Apple devices stay queued")
    }

    let worker = DeliveryWorker(
        store: store, providers: providers, clock: clock,
        configuration: .init(maximumConcurrentDeliveries: configuration.deliveryConcurrency), logger: logger)
    let pipeline = SendPipeline(
        store: store, worker: worker, clock: clock,
        configuration: .init(
            dailyLimit: configuration.dailyLimit, timeToLive: configuration.notificationTTL,
            deliveryWait: configuration.deliveryWait))
    let router = buildRouter(
        store: store, pipeline: pipeline, clock: clock, bodyLimit: configuration.maximumBodyBytes,
        onDeviceChanged: { worker.wake() })
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Herald"),
        services: closers + [worker],
        logger: logger)
}

func buildRouter(
    store: any HeraldStore, pipeline: SendPipeline, clock: any WallClock, bodyLimit: Int,
    onDeviceChanged: @escaping @Sendable () -> Void
) -> Router<HeraldRequestContext> {
    let router = Router(context: HeraldRequestContext.self)
    router.add(middleware: JSONErrorMiddleware())
    router.get("healthz") { _, _ in JSONResponse.make(status: .ok, body: ["status": "ok"]) }
    router.get("readyz") { _, _ in
        await store.isReachable()
            ? JSONResponse.make(status: .ok, body: ["status": "ready"])
            : JSONResponse.make(status: .serviceUnavailable, body: ["status": "store unreachable"])
    }
    let directory = DeviceDirectory(store: store)
    let api = router.group("api/push")
    RegistrationController(
        store: store, directory: directory, clock: clock, bodyLimit: bodyLimit, onDeviceChanged: onDeviceChanged
    ).addRoutes(to: api)
    NotifyController(pipeline: pipeline, directory: directory, clock: clock, bodyLimit: bodyLimit).addRoutes(to: api)
    NotificationStatusController(store: store, directory: directory).addRoutes(to: api)
    return router
}

/// Closes the store after everything that uses it has stopped.
struct StoreCloser: Service {
    let store: any HeraldStore

    func run() async throws {
        try? await gracefulShutdown()
        try await store.close()
    }
}

