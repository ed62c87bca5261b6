import Foundation
import HeraldAPNs
import HeraldActivities
import HeraldCore
import HeraldDelivery
import HeraldFCM
import HeraldProviderKit
import HeraldStore
import HeraldTransport
import HeraldWebPush
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The composition root: opens the store, builds the providers, the delivery engine and the routes.
/// `herald serve` and the tests both call it.
///
/// ```swift
/// let app = try await buildApplication(try ConfigurationLoader.load(file: nil, environment: ProcessInfo.processInfo.environment))
/// try await app.runService()
/// ```
public func buildApplication(
    _ configuration: HeraldConfiguration, clock: any WallClock = SystemClock(), logger: Logger? = nil,
    store givenStore: (any HeraldStore)? = nil, receiptObserver: any ReceiptEndedObserver = NoReceiptEndedObserver(),
    providers catalog: [ProviderEntry<HeraldConfiguration>] = providerCatalog
) async throws -> some ApplicationProtocol {
    let logger = logger ?? {
        var logger = Logger(label: "herald")
        logger.logLevel = configuration.logLevel
        return logger
    }()
    let store: any HeraldStore
    do {
        if let givenStore {
            store = givenStore
        } else {
            store = try await StoreFactory.open(
                configuration.databaseURL, maximumBytes: configuration.databaseMaximumBytes, timeout: configuration.storeTimeout,
                logger: logger)
        }
    } catch {
        throw ConfigurationError("HERALD_DATABASE_URL: cannot open \(StoreFactory.displayed(configuration.databaseURL)): \(error)")
    }
    var configuration = configuration
    // Each provider's server-held secrets (Web Push's VAPID key), made or loaded before the providers are built.
    for entry in catalog {
        try await StartUpStep.run("preparing the providers' secrets", logger: logger) {
            try await entry.prepareSecrets(&configuration, store: store, logger: logger)
        }
    }
    let profiles = ProviderProfiles(try catalog.map { try $0.profile(configuration) }, fallback: .apns)
    try await StartUpStep.run("checking the stored tokens", logger: logger) {
        try await StoredTokenSweep.run(store: store, providers: profiles, clock: clock, logger: logger)
    }
    let renderers = profiles.renderers(otherwise: APNsRenderer())
    let metrics = HeraldMetrics(enabled: configuration.metrics)
    var providers: [any PushProvider] = []
    var closers: [any Service] = [StoreCloser(store: store)]
    let providerServices = ProviderServices(clock: clock, logger: logger, metrics: metrics.factory)
    for entry in catalog {
        // A configuration error (one line naming the option) is rendered by `startupMessage`.
        guard let provider = try entry.makeProvider(configuration, services: providerServices) else {
            logger.notice("\(entry.description.notConfiguredNotice)")
            continue
        }
        providers.append(provider)
        closers.append(ProviderCloser(shutdown: provider.shutdown))
    }

    let instanceID = configuration.instanceID ?? defaultInstanceID(port: configuration.port)
    // Signed callbacks (issue 39, section 4): Callbacks/. The engine tells the tokens' outcome callbacks of each outcome.
    let callbackDispatcher = CallbackDispatcher(
        store: store, transport: try HTTPCallbackSender(configuration: configuration.callbacks, clock: clock, logger: logger), clock: clock,
        instanceID: instanceID, configuration: configuration.callbacks, logger: logger)
    let callbackOutbox = CallbackOutbox(store: store, dispatcher: callbackDispatcher, clock: clock)
    let hub = WebSocketHub(
        confirmTimeout: configuration.webSocketConfirmTimeout, renderers: renderers, metrics: metrics.factory, logger: logger)
    // The tokens' outcome callbacks, then a Live Activity token found dead on a retry (HeraldActivities).
    let activityOutcomes = ActivityDeliveryOutcomes(next: TokenOutcomeCallbacks(outbox: callbackOutbox, logger: logger))
    let engine = DeliveryEngine(
        store: store, providers: providers, localChannel: hub, clock: clock,
        configuration: .init(
            maximumConcurrentDeliveries: configuration.deliveryConcurrency, leaseDuration: configuration.leaseDuration,
            deliveryWait: configuration.deliveryWait, outcomeCommitDelay: configuration.outcomeCommitDelay,
            instanceID: instanceID, storeTimeout: configuration.storeTimeout),
        metrics: DeliveryMetrics(factory: metrics.factory, platforms: profiles.all.map(\.platform) + [.websocket]), logger: logger,
        outcomeObserver: activityOutcomes)
    if let files = OpenFileLimit.raise(), files - OpenFileLimit.reserve < configuration.connectionLimits.maximumConnections {
        configuration.connectionLimits.maximumConnections = max(1, files - OpenFileLimit.reserve)
        logger.notice(
            "The open-file limit caps client connections below HERALD_MAX_CONNECTIONS",
            metadata: ["open_files": "\(files)", "connections": "\(configuration.connectionLimits.maximumConnections)"])
    }
    let pipeline = SendPipeline(
        store: store, engine: engine, clock: clock,
        configuration: .init(
            dailyLimit: configuration.dailyLimit, timeToLive: configuration.notificationTTL,
            exemptDailyLimit: configuration.exemptDailyLimit, maximumPendingPerDevice: configuration.maximumPendingPerDevice),
        renderers: renderers)
    let link = store.cluster.map { ClusterLink(cluster: $0, hub: hub, engine: engine, logger: logger) }
    let retention = RetentionSweeper(
        store: store,
        policy: RetentionPolicy(
            retention: configuration.retention, deviceIdleDays: configuration.deviceIdleDays, interval: configuration.retentionInterval),
        clock: clock, logger: logger)
    // Approval cards' long polls (docs/activities.md, "Approval cards"), polled across instances as the answers' are.
    let approvalWaiters = ApprovalWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let activities = ActivityDispatcher(
        store: store, pipeline: pipeline, clock: clock, attributesType: configuration.liveActivityAttributesType,
        instanceID: engine.instanceID, settled: { approvalWaiters.answered($0) }, logger: logger)
    activityOutcomes.attach(activities)
    // Answer long polls; with several instances, answers taken by another one are polled for (docs/api.md, "Answers").
    let answerWaiters = AnswerWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let scheduled = ScheduledSendDispatcher(
        store: store, pipeline: pipeline, clock: clock, instanceID: engine.instanceID, pollInterval: configuration.scheduledSendPollInterval,
        logger: logger)
    // Repeats until acknowledged (Receipts/); the observer is told of receipts acknowledged or expired.
    let receiptWaiters = ReceiptWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let receipts = ReceiptDispatcher(
        store: store, pipeline: pipeline, clock: clock, instanceID: engine.instanceID, waiters: receiptWaiters,
        observer: ReceiptObservers(observers: [receiptObserver, ReceiptCallbacks(outbox: callbackOutbox, logger: logger)]),
        pollInterval: configuration.receiptPollInterval, logger: logger)
    let callbacks = CallbackSettings(outbox: callbackOutbox, policy: try configuration.callbacks.egressPolicy())
    let (router, webSocket) = buildRouters(
        RouteDependencies(
            store: store, pipeline: pipeline, engine: engine, hub: hub, link: link, activities: activities, answerWaiters: answerWaiters,
            approvalWaiters: approvalWaiters, retention: retention, scheduled: scheduled, receipts: receipts, callbacks: callbacks,
            activityWrites: ActivityWriteLimiter(
                burst: configuration.activityWriteBurst, perSecond: Double(configuration.activityWritesPerSecond), clock: clock),
            clock: clock,
            bodyLimit: configuration.maximumBodyBytes, registration: try .init(configuration), providers: profiles,
            addresses: try ClientAddressResolver(configuration), metrics: metrics.server,
            adminToken: configuration.adminToken,
            webSocketSession: .init(
                maximumMessageSize: WebSocketController.maximumMessageSize, pingInterval: configuration.webSocketPingInterval,
                subscribeTimeout: configuration.webSocketSubscribeTimeout,
                subscribesPerMinute: configuration.webSocketSubscribesPerMinute),
            readinessTimeout: configuration.readinessTimeout, logger: logger))
    var services: [any Service] = closers + [engine, hub]
    services.append(activities)
    services.append(retention)
    services.append(scheduled)
    services.append(receipts)
    services.append(callbackDispatcher)
    if let registry = metrics.registry {
        let endpoint = MetricsEndpoint(registry: registry, metrics: metrics.server, store: store, engine: engine, hub: hub, clock: clock)
        if let port = configuration.metricsPort {
            services.append(endpoint.separateListener(host: configuration.metricsHost, port: port, logger: logger))
        } else {
            endpoint.addRoute(to: router)
        }
    }
    if let link { services.append(link) }
    services.append(HeapTrimmer())
    services.append(answerWaiters)
    services.append(receiptWaiters)
    services.append(approvalWaiters)
    return Application(
        router: AccessLog(MethodCheckingRouter(router: router), logsRequests: configuration.accessLog),
        server: guardedServer(webSocket: webSocket, configuration: configuration),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Herald"),
        // Stopped in reverse order: the cluster is told this instance leaves, sockets close, leases are given back,
        // then the provider and the store close.
        services: services,
        logger: logger)
}

/// The push providers Herald builds, in this order, each from its settings in the configuration (left out when they
/// are not set); `herald <provider> check` is generated from the same list, and each provider's payload renderer is
/// taken from it. Adding a provider adds one line here (docs/providers.md).
public let providerCatalog: [ProviderEntry<HeraldConfiguration>] = [
    ProviderEntry(APNsModule.self) { $0.apns },
    ProviderEntry(FCMModule.self) { $0.fcm },
    ProviderEntry(WebPushModule.self, at: \.webPush) { $0.subject != nil },
]

/// Each platform's payload renderer, from the catalog; WebSocket-only devices get the APNs payload. Renderers need no
/// credentials, so a device is rendered for even while its provider is not configured. (`buildApplication` takes its
/// renderers from the catalog it is given, the same for ``providerCatalog``.)
let payloadRenderers = PayloadRenderers(
    Dictionary(providerCatalog.map { ($0.description.platform, $0.module.renderer) }, uniquingKeysWith: { first, _ in first }),
    fallback: APNsRenderer())

/// `HOST:PORT`: unique among instances on one database, and the same after a restart (which then takes its
/// predecessor's leases back at once). With port 0 (a port chosen by the system) a random suffix stands for the port.
func defaultInstanceID(port: Int) -> String {
    let host = ProcessInfo.processInfo.hostName
    return port == 0 ? "\(host):0-\(UUID().lowercasedText.prefix(8))" : "\(host):\(port)"
}

/// HTTP/1.1 with the WebSocket upgrade, every connection under a ``ConnectionGuard`` (timeouts, connection cap,
/// parser errors answered in JSON, RFC 6455 frame checks).
func guardedServer(webSocket: WebSocketController, configuration: HeraldConfiguration) -> HTTPServerBuilder {
    let connections = OpenConnections(trustedProxies: (try? ClientAddressResolver(configuration).trustedProxies) ?? [])
    return HTTPServerBuilder { responder in
        GuardedServerChannel(
            base: HTTPWithWebSocketChannel(responder: responder, webSocket: webSocket),
            limits: configuration.connectionLimits, connections: connections, refusals: .herald,
            isWebSocketHandshake: { HTTPWithWebSocketChannel.isHandshake($0) })
    }
}


/// The registration limits of the configuration, as the registration controller takes them.
struct RegistrationSettings: Sendable {
    /// `HERALD_REGISTRATIONS_PER_MINUTE`; `nil` or 0 for no limit.
    var perMinute: Int?
    /// `HERALD_MAX_DEVICES`.
    var maximumDevices: Int?
    /// The SHA-256 of `HERALD_REGISTRATION_TOKEN` (the token itself is not kept).
    var tokenHash: String?
    /// The VAPID public key `GET /api/push/webpush/key` answers with; `nil`: that route answers 404.
    var webPushPublicKey: String?

    init(
        perMinute: Int? = nil, maximumDevices: Int? = nil, tokenHash: String? = nil, webPushPublicKey: String? = nil
    ) {
        self.perMinute = perMinute
        self.maximumDevices = maximumDevices
        self.tokenHash = tokenHash
        self.webPushPublicKey = webPushPublicKey
    }

    init(_ configuration: HeraldConfiguration) throws {
        self.init(
            perMinute: configuration.registrationsPerMinute, maximumDevices: configuration.maximumDevices,
            tokenHash: configuration.registrationToken.map(Secrets.hash),
            webPushPublicKey: try configuration.webPush.vapidPrivateKey.map { key throws in try VAPIDKey.publicKey(of: key) })
    }
}

/// Closes the store after everything that uses it has stopped.
struct StoreCloser: Service {
    let store: any HeraldStore

    func run() async throws {
        try? await gracefulShutdown()
        try await store.close()
    }
}


/// Shuts a provider's connections down after the delivery engine has stopped.
struct ProviderCloser: Service {
    let shutdown: @Sendable () async throws -> Void

    func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}
