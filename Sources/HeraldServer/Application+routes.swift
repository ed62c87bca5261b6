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

/// The HTTP router, and the controller that decides WebSocket upgrades (it sees only requests that ask for one).
func buildRouters(_ routes: RouteDependencies) -> (http: Router<HeraldRequestContext>, webSocket: WebSocketController) {
    // The surfaces whose routes exist only when they are given.
    let (activities, receipts, scheduled, callbacks) = (routes.activities, routes.receipts, routes.scheduled, routes.callbacks)
    let adminToken = routes.adminToken
    let router = Router(context: HeraldRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: JSONErrorMiddleware())
    router.add(middleware: RequestMetricsMiddleware(metrics: routes.metrics))
    router.get("healthz") { _, _ in JSONResponse.make(status: .ok, body: ["status": "ok"]) }
    let readinessDeadlines = DeadlineAlarm()
    router.get("readyz") { _, _ in
        // Within a second whatever the store does: a frozen database is not ready.
        let readiness = try? await withStoreDeadline(routes.readinessTimeout, what: "the readiness check", alarm: readinessDeadlines) {
            await routes.store.readiness()
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
    let directory = DeviceDirectory(store: routes.store, sightings: routes.retention)
    let credentials = CredentialGuard(limiter: AuthFailureLimiter(clock: routes.clock), addresses: routes.addresses)
    let api = router.group("api/push")
    let registrar = DeviceRegistrar(
        store: routes.store, clock: routes.clock, limiter: RegistrationLimiter(perMinute: routes.registration.perMinute, clock: routes.clock),
        maximumDevices: routes.registration.maximumDevices, registrationTokenHash: routes.registration.tokenHash,
        endpointLimiter: EndpointChangeLimiter(clock: routes.clock))
    RegistrationController(
        registrar: registrar, directory: directory, credentials: credentials, bodyLimit: routes.bodyLimit,
        providers: routes.providers,
        onDeviceChanged: { id in await routes.engine.deliverPending(of: id) }
    ).addRoutes(to: api)
    WebPushKeyController(publicKey: routes.registration.webPushPublicKey).addRoutes(to: api)
    let topics = TopicDirectory(store: routes.store, credentials: credentials)  // issue 42: Topics/
    NotifyController(
        pipeline: routes.pipeline, directory: directory, credentials: credentials, clock: routes.clock, bodyLimit: routes.bodyLimit,
        topics: topics
    ).addRoutes(to: api)
    TopicController(topics: topics, directory: directory, credentials: credentials, clock: routes.clock, bodyLimit: routes.bodyLimit).addRoutes(to: api)
    let tokens = APITokenManager(store: routes.store, clock: routes.clock)
    NotificationStatusController(
        pipeline: routes.pipeline, directory: directory, tokens: tokens, credentials: credentials, reports: routes.store, providers: routes.providers,
        topics: topics
    ).addRoutes(to: api)
    APITokenController(tokens: tokens, directory: directory, credentials: credentials, bodyLimit: routes.bodyLimit).addRoutes(to: api)
    let authorizer = PushWardAuthorizer(tokens: tokens, credentials: credentials)
    ActionNotificationController(
        pipeline: routes.pipeline, authorizer: authorizer, activities: routes.store, clock: routes.clock, bodyLimit: routes.bodyLimit,
        providers: routes.providers,
        receipts: receipts,
        callbackPolicy: callbacks?.policy ?? .knownServicesOnly
    ).addRoutes(to: router)
    if let callbacks {  // the tokens' outcome callback URLs: Callbacks/
        TokenCallbackController(store: routes.store, authorizer: authorizer, policy: callbacks.policy, clock: routes.clock, bodyLimit: routes.bodyLimit)
            .addRoutes(to: router)
    }
    // Answers, the app's events and the inbox (issue 39): Answers/.
    let waiters = routes.answerWaiters ?? AnswerWaiters(store: routes.store)
    AnswerPollController(store: routes.store, authorizer: authorizer, waiters: waiters).addRoutes(to: router)
    var reports = DeviceReportsController<HeraldRequestContext>(
        store: routes.store, directory: directory, credentials: credentials, waiters: waiters, clock: routes.clock, bodyLimit: routes.bodyLimit,
        receipts: receipts)
    if let callbacks {
        let outcomes = TokenOutcomeCallbacks(outbox: callbacks.outbox, logger: routes.logger)
        reports.answered = { notification, answer in await outcomes.answered(notification, answer) }
    }
    reports.addRoutes(to: api)
    if let receipts {  // issue 39, section 3: Receipts/
        ReceiptController(receipts: receipts, authorizer: authorizer, bodyLimit: routes.bodyLimit).addRoutes(to: router)
    }
    if let scheduled {  // issue 39, section 5: Scheduled/
        ScheduledSendController(
            store: routes.store, pipeline: routes.pipeline, authorizer: authorizer, dispatcher: scheduled, clock: routes.clock, bodyLimit: routes.bodyLimit,
            providers: routes.providers
        ).addRoutes(to: router)
    }
    // PushWard's account paths; `activity_count` comes from the activity store once it exists (issue 31, la-service).
    PushWardAccountController(
        authorizer: authorizer, pipeline: routes.pipeline,
        activityCount: { id in try await routes.store.activities(deviceID: id).filter { !$0.isTombstone }.count }
    ).addRoutes(to: router)
    if let activities {  // PushWard's activities (issue 31): PushWardActivities/
        let approvals = routes.approvalWaiters ?? ApprovalWaiters(store: routes.store)
        let service = ActivityService(
            store: routes.store, clock: routes.clock, logger: routes.logger, settled: { approvals.answered($0) }, wake: { activities.wake($0) })
        PushWardActivitiesController(
            service: service, authorizer: authorizer, bodyLimit: routes.bodyLimit,
            writeLimiter: routes.activityWrites ?? ActivityWriteLimiter(clock: routes.clock), approvalWaiters: approvals
        ).addRoutes(to: router)
        ActivityTokenController(service: service, directory: directory, credentials: credentials, bodyLimit: routes.bodyLimit).addRoutes(to: api)
        ApprovalAnswerController(service: service, directory: directory, credentials: credentials, bodyLimit: routes.bodyLimit).addRoutes(to: api)
    }
    HomeAssistantController(
        pipeline: routes.pipeline, directory: directory, credentials: credentials, clock: routes.clock, bodyLimit: routes.bodyLimit,
        providers: routes.providers,
        activityTimestamps: routes.store
    ).addRoutes(to: api)
    if let adminToken {  // without HERALD_ADMIN_TOKEN, /admin is not there at all (404)
        var admin = AdminController<HeraldRequestContext>(
            token: adminToken, store: routes.store, pipeline: routes.pipeline, directory: directory, credentials: credentials, clock: routes.clock,
            bodyLimit: routes.bodyLimit, providers: routes.providers)
        admin.deviceIdleDays = routes.retention?.policy.deviceIdleDays
        admin.addRoutes(to: router)
    }
    let webSocket = WebSocketController(
        hub: routes.hub, directory: directory, credentials: credentials, engine: routes.engine, link: routes.link,
        sessionConfiguration: routes.webSocketSession, clock: routes.clock, logger: routes.logger)
    webSocket.addRoutes(to: router)
    // The inbox lists what a device was sent as the web app's service engine reads it: Web Push's document.
    RecentNotificationsController(store: routes.store, directory: directory, credentials: credentials, renderer: WebPushModule.renderer)
        .addRoutes(to: api)
    WebAppController().addRoutes(to: router)
    // The senders other tools speak (issue 42, docs/senders.md): ntfy, Gotify, Bark and the webhook presets. The
    // middleware, added after every route, takes only what no route took (ntfy's and Bark's `/<USER_ID>/…` paths).
    let senders = SenderDelivery(
        pipeline: routes.pipeline, directory: directory, credentials: credentials, tokens: tokens, clock: routes.clock, bodyLimit: routes.bodyLimit,
        topics: topics, scheduling: scheduled.map { SenderScheduling(store: routes.store, dispatcher: $0) })
    let ntfy = NtfyController<HeraldRequestContext>(senders: senders)
    let bark = BarkController<HeraldRequestContext>(senders: senders)
    ntfy.addRoutes(to: router)
    bark.addRoutes(to: router)
    GotifyController(senders: senders).addRoutes(to: router)
    HookController(senders: senders).addRoutes(to: api)
    router.add(middleware: SenderPathMiddleware(ntfy: ntfy, bark: bark, bodyLimit: routes.bodyLimit))
    return (router, webSocket)
}
