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
    for entry in catalog { try await entry.prepareSecrets(&configuration, store: store, logger: logger) }
    let profiles = ProviderProfiles(try catalog.map { try $0.profile(configuration) }, fallback: .apns)
    try await StoredTokenSweep.run(store: store, providers: profiles, clock: clock, logger: logger)
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
    let worker = DeliveryEngine(
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
        store: store, engine: worker, clock: clock,
        configuration: .init(
            dailyLimit: configuration.dailyLimit, timeToLive: configuration.notificationTTL,
            exemptDailyLimit: configuration.exemptDailyLimit, maximumPendingPerDevice: configuration.maximumPendingPerDevice),
        renderers: renderers)
    let link = store.cluster.map { ClusterLink(cluster: $0, hub: hub, worker: worker, logger: logger) }
    let retention = RetentionSweeper(
        store: store,
        policy: RetentionPolicy(
            retention: configuration.retention, deviceIdleDays: configuration.deviceIdleDays, interval: configuration.retentionInterval),
        clock: clock, logger: logger)
    // Approval cards' long polls (docs/activities.md, "Approval cards"), polled across instances as the answers' are.
    let approvalWaiters = ApprovalWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let activities = ActivityDispatcher(
        store: store, pipeline: pipeline, clock: clock, attributesType: configuration.liveActivityAttributesType,
        instanceID: worker.instanceID, settled: { approvalWaiters.answered($0) }, logger: logger)
    activityOutcomes.attach(activities)
    // Answer long polls; with several instances, answers taken by another one are polled for (docs/api.md, "Answers").
    let answerWaiters = AnswerWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let scheduled = ScheduledSendDispatcher(
        store: store, pipeline: pipeline, clock: clock, instanceID: worker.instanceID, pollInterval: configuration.scheduledSendPollInterval,
        logger: logger)
    // Repeats until acknowledged (Receipts/); the observer is told of receipts acknowledged or expired.
    let receiptWaiters = ReceiptWaiters(store: store, pollInterval: store.cluster == nil ? nil : .seconds(1))
    let receipts = ReceiptDispatcher(
        store: store, pipeline: pipeline, clock: clock, instanceID: worker.instanceID, waiters: receiptWaiters,
        observer: ReceiptObservers(observers: [receiptObserver, ReceiptCallbacks(outbox: callbackOutbox, logger: logger)]),
        pollInterval: configuration.receiptPollInterval, logger: logger)
    let callbacks = CallbackSettings(outbox: callbackOutbox, policy: try configuration.callbacks.egressPolicy())
    let (router, webSocket) = buildRouters(
        store: store, pipeline: pipeline, worker: worker, hub: hub, link: link, activities: activities, answerWaiters: answerWaiters,
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
        readinessTimeout: configuration.readinessTimeout, logger: logger)
    var services: [any Service] = closers + [worker, hub]
    services.append(activities)
    services.append(retention)
    services.append(scheduled)
    services.append(receipts)
    services.append(callbackDispatcher)
    if let registry = metrics.registry {
        let endpoint = MetricsEndpoint(registry: registry, metrics: metrics.server, store: store, worker: worker, hub: hub, clock: clock)
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

/// The HTTP router, and the controller that decides WebSocket upgrades (it sees only requests that ask for one).
func buildRouters(
    store: any HeraldStore, pipeline: SendPipeline, worker: DeliveryEngine, hub: WebSocketHub, link: ClusterLink? = nil,
    activities: ActivityDispatcher? = nil, answerWaiters: AnswerWaiters? = nil, approvalWaiters: ApprovalWaiters? = nil,
    retention: RetentionSweeper? = nil,
    scheduled: ScheduledSendDispatcher? = nil, receipts: ReceiptDispatcher? = nil, callbacks: CallbackSettings? = nil,
    activityWrites: ActivityWriteLimiter? = nil,
    clock: any WallClock, bodyLimit: Int,
    registration: RegistrationSettings, providers: ProviderProfiles, addresses: ClientAddressResolver,
    metrics: ServerMetrics, adminToken: String?, webSocketSession: WebSocketSessionConfiguration,
    readinessTimeout: Duration = .milliseconds(800), logger: Logger
) -> (http: Router<HeraldRequestContext>, webSocket: WebSocketController) {
    let router = Router(context: HeraldRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: JSONErrorMiddleware())
    router.add(middleware: RequestMetricsMiddleware(metrics: metrics))
    router.get("healthz") { _, _ in JSONResponse.make(status: .ok, body: ["status": "ok"]) }
    let readinessDeadlines = DeadlineAlarm()
    router.get("readyz") { _, _ in
        // Within a second whatever the store does: a frozen database is not ready.
        let readiness = try? await withStoreDeadline(readinessTimeout, what: "the readiness check", alarm: readinessDeadlines) {
            await store.readiness()
        }
        switch readiness ?? .unreachable {
        case .ready:
            return JSONResponse.make(status: .ok, body: ["status": "ready"])
        case .unreachable:
            return JSONResponse.make(status: .serviceUnavailable, body: ["status": "store unreachable"])
        case .cannotWrite(let reason):
            return JSONResponse.make(status: .serviceUnavailable, body: ["status": "store cannot write", "reason": .string(reason)])
        }
    }
    let document = ByteBuffer(bytes: PackageResources.openapi_yaml)  // compiled into the binary
    router.get("openapi.yaml") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
            body: ResponseBody(byteBuffer: document))
    }
    let directory = DeviceDirectory(store: store, sightings: retention)
    let credentials = CredentialGuard(limiter: AuthFailureLimiter(clock: clock), addresses: addresses)
    let api = router.group("api/push")
    let registrar = DeviceRegistrar(
        store: store, clock: clock, limiter: RegistrationLimiter(perMinute: registration.perMinute, clock: clock),
        maximumDevices: registration.maximumDevices, registrationTokenHash: registration.tokenHash,
        endpointLimiter: EndpointChangeLimiter(clock: clock))
    RegistrationController(
        registrar: registrar, directory: directory, credentials: credentials, bodyLimit: bodyLimit,
        providers: providers,
        onDeviceChanged: { id in await worker.deliverPending(of: id) }
    ).addRoutes(to: api)
    WebPushKeyController(publicKey: registration.webPushPublicKey).addRoutes(to: api)
    let topics = TopicDirectory(store: store, credentials: credentials)  // issue 42: Topics/
    NotifyController(pipeline: pipeline, directory: directory, credentials: credentials, clock: clock, bodyLimit: bodyLimit, topics: topics)
        .addRoutes(to: api)
    TopicController(topics: topics, directory: directory, credentials: credentials, clock: clock, bodyLimit: bodyLimit).addRoutes(to: api)
    let tokens = APITokenManager(store: store, clock: clock)
    NotificationStatusController(
        pipeline: pipeline, directory: directory, tokens: tokens, credentials: credentials, reports: store, providers: providers,
        topics: topics
    ).addRoutes(to: api)
    APITokenController(tokens: tokens, directory: directory, credentials: credentials, bodyLimit: bodyLimit).addRoutes(to: api)
    let authorizer = PushWardAuthorizer(tokens: tokens, credentials: credentials)
    ActionNotificationController(
        pipeline: pipeline, authorizer: authorizer, activities: store, clock: clock, bodyLimit: bodyLimit, providers: providers,
        receipts: receipts,
        callbackPolicy: callbacks?.policy ?? .knownServicesOnly
    ).addRoutes(to: router)
    if let callbacks {  // the tokens' outcome callback URLs: Callbacks/
        TokenCallbackController(store: store, authorizer: authorizer, policy: callbacks.policy, clock: clock, bodyLimit: bodyLimit)
            .addRoutes(to: router)
    }
    // Answers, the app's events and the inbox (issue 39): Answers/.
    let waiters = answerWaiters ?? AnswerWaiters(store: store)
    AnswerPollController(store: store, authorizer: authorizer, waiters: waiters).addRoutes(to: router)
    var reports = DeviceReportsController<HeraldRequestContext>(
        store: store, directory: directory, credentials: credentials, waiters: waiters, clock: clock, bodyLimit: bodyLimit,
        receipts: receipts)
    if let callbacks {
        let outcomes = TokenOutcomeCallbacks(outbox: callbacks.outbox, logger: logger)
        reports.answered = { notification, answer in await outcomes.answered(notification, answer) }
    }
    reports.addRoutes(to: api)
    if let receipts {  // issue 39, section 3: Receipts/
        ReceiptController(receipts: receipts, authorizer: authorizer, bodyLimit: bodyLimit).addRoutes(to: router)
    }
    if let scheduled {  // issue 39, section 5: Scheduled/
        ScheduledSendController(
            store: store, pipeline: pipeline, authorizer: authorizer, dispatcher: scheduled, clock: clock, bodyLimit: bodyLimit,
            providers: providers
        ).addRoutes(to: router)
    }
    // PushWard's account paths; `activity_count` comes from the activity store once it exists (issue 31, la-service).
    PushWardAccountController(
        authorizer: authorizer, pipeline: pipeline,
        activityCount: { id in try await store.activities(deviceID: id).filter { !$0.isTombstone }.count }
    ).addRoutes(to: router)
    if let activities {  // PushWard's activities (issue 31): PushWardActivities/
        let approvals = approvalWaiters ?? ApprovalWaiters(store: store)
        let service = ActivityService(
            store: store, clock: clock, logger: logger, settled: { approvals.answered($0) }, wake: { activities.wake($0) })
        PushWardActivitiesController(
            service: service, authorizer: authorizer, bodyLimit: bodyLimit,
            writeLimiter: activityWrites ?? ActivityWriteLimiter(clock: clock), approvalWaiters: approvals
        ).addRoutes(to: router)
        ActivityTokenController(service: service, directory: directory, credentials: credentials, bodyLimit: bodyLimit).addRoutes(to: api)
        ApprovalAnswerController(service: service, directory: directory, credentials: credentials, bodyLimit: bodyLimit).addRoutes(to: api)
    }
    HomeAssistantController(
        pipeline: pipeline, directory: directory, credentials: credentials, clock: clock, bodyLimit: bodyLimit, providers: providers,
        activityTimestamps: store
    ).addRoutes(to: api)
    if let adminToken {  // without HERALD_ADMIN_TOKEN, /admin is not there at all (404)
        var admin = AdminController<HeraldRequestContext>(
            token: adminToken, store: store, pipeline: pipeline, directory: directory, credentials: credentials, clock: clock,
            bodyLimit: bodyLimit, providers: providers)
        admin.deviceIdleDays = retention?.policy.deviceIdleDays
        admin.addRoutes(to: router)
    }
    let webSocket = WebSocketController(
        hub: hub, directory: directory, credentials: credentials, worker: worker, link: link,
        sessionConfiguration: webSocketSession, clock: clock, logger: logger)
    webSocket.addRoutes(to: router)
    // The inbox lists what a device was sent as the web app's service worker reads it: Web Push's document.
    RecentNotificationsController(store: store, directory: directory, credentials: credentials, renderer: WebPushModule.renderer)
        .addRoutes(to: api)
    WebAppController().addRoutes(to: router)
    // The senders other tools speak (issue 42, docs/senders.md): ntfy, Gotify, Bark and the webhook presets. The
    // middleware, added after every route, takes only what no route took (ntfy's and Bark's `/<USER_ID>/…` paths).
    let senders = SenderDelivery(
        pipeline: pipeline, directory: directory, credentials: credentials, tokens: tokens, clock: clock, bodyLimit: bodyLimit,
        topics: topics, scheduling: scheduled.map { SenderScheduling(store: store, dispatcher: $0) })
    let ntfy = NtfyController<HeraldRequestContext>(senders: senders)
    let bark = BarkController<HeraldRequestContext>(senders: senders)
    ntfy.addRoutes(to: router)
    bark.addRoutes(to: router)
    GotifyController(senders: senders).addRoutes(to: router)
    HookController(senders: senders).addRoutes(to: api)
    router.add(middleware: SenderPathMiddleware(ntfy: ntfy, bark: bark, bodyLimit: bodyLimit))
    return (router, webSocket)
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


/// Shuts a provider's connections down after the worker has stopped.
struct ProviderCloser: Service {
    let shutdown: @Sendable () async throws -> Void

    func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}
