import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import Hummingbird
import Logging

/// The operator dashboard at `/admin`, served only when `HERALD_ADMIN_TOKEN` is set (otherwise `/admin` is 404):
/// server-rendered HTML without script.
///
/// - `GET /admin/login`, `POST /admin/login` (the token; a wrong one counts as a failed credential check),
///   `POST /admin/logout`;
/// - `GET /admin`: the overview (devices by platform and state, notifications by state over 24 h, the outbox
///   depth, the delivery rate, the most frequent provider errors) with the look-up forms;
/// - `GET /admin/notification?id=`: one notification's history and details;
/// - `POST /admin/device` (the USER_ID, in the body so that it stays out of URLs and logs): one device, without its
///   secrets, with today's quota and its recent notifications;
/// - `GET /admin/send`, `POST /admin/send`: a test notification through the send pipeline;
/// - `GET /admin/live`: the latest changes of notifications, reloading itself every few seconds;
/// - `GET /admin/style.css`.
///
/// Every page but the login page needs the session cookie; every POST but the login carries the session's CSRF token.
struct AdminController<Context: RemoteAddressRequestContext>: Sendable {
    static var cookieName: String { "herald_admin" }
    /// Seconds between reloads of the live view.
    static var liveRefreshSeconds: Int { 3 }
    /// Notifications listed in the live view and on a device's page.
    static var listLength: Int { 30 }

    let store: any HeraldStore
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let token: AdminToken
    let sessions: AdminSessions
    let pages: AdminPages
    let clock: any WallClock
    let bodyLimit: Int
    /// The providers, for what a device's page shows of its address (an environment, for APNs).
    let providers: ProviderProfiles
    /// `HERALD_DEVICE_IDLE_DAYS`: the overview shows how many devices it removes (or, when off, how many are idle
    /// for ``idleDaysShownWhenOff`` days).
    var deviceIdleDays: Int?
    static var idleDaysShownWhenOff: Int { 90 }

    init(
        token: String, store: any HeraldStore, pipeline: SendPipeline, directory: DeviceDirectory, credentials: CredentialGuard,
        clock: any WallClock, bodyLimit: Int, providers: ProviderProfiles
    ) {
        self.token = AdminToken(token)
        self.store = store
        self.pipeline = pipeline
        self.directory = directory
        self.credentials = credentials
        self.sessions = AdminSessions(clock: clock)
        self.pages = AdminPages(clock: clock)
        self.clock = clock
        self.bodyLimit = bodyLimit
        self.providers = providers
    }

    /// Whether `device`'s provider has environments (APNs' production and sandbox) to show.
    private func showsEnvironment(of device: Device) -> Bool {
        providers[device.platform]?.description.hasEnvironments == true
    }

    func addRoutes(to router: Router<Context>) {
        let admin = router.group("admin")
        admin.get("style.css") { _, _ in
            var headers = AdminPages.securityHeaders
            headers[.contentType] = "text/css; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: AdminPages.stylesheet))
        }
        admin.get("login", use: loginPage)
        admin.post("login", use: login)
        admin.post("logout", use: page(.form, logout))
        admin.get(use: page(.signedIn, overview))
        admin.get("notification", use: page(.signedIn, notification))
        admin.post("device", use: page(.form, device))
        admin.get("send", use: page(.signedIn, sendPage))
        admin.post("send", use: page(.form, send))
        admin.get("live", use: page(.signedIn, live))
    }

    // MARK: Sessions

    /// A signed-in request: the session, its cookie's secret, and the form of a POST (its CSRF token checked).
    struct SignedIn {
        var secret: String
        var session: AdminSessions.Session
        var form: [String: String]
    }

    enum Requirement {
        /// A session (a GET without one is sent to the login page).
        case signedIn
        /// A session and a form whose `csrf` is the session's.
        case form
    }

    /// Runs `handler` for a request with a live session (and, for `.form`, a form with the session's CSRF token);
    /// any refusal becomes an HTML page with the refusal's status.
    func page(
        _ requirement: Requirement, _ handler: @escaping @Sendable (Request, Context, SignedIn) async throws -> Response
    ) -> @Sendable (Request, Context) async throws -> Response {
        { request, context in
            guard let secret = request.cookies[Self.cookieName]?.value, let session = sessions.session(secret: secret) else {
                if requirement == .signedIn { return AdminPages.redirect(to: "/admin/login") }
                return pages.message(
                    "Your session has ended (or you never logged in). Log in, then try again.", title: "Logged out", session: nil,
                    status: .unauthorized, back: "/admin/login", backLabel: "Log in")
            }
            do {
                var form: [String: String] = [:]
                if requirement == .form {
                    form = try await FormBody.fields(of: request, limit: bodyLimit)
                    guard let csrf = form["csrf"], Secrets.constantTimeEquals(csrf, session.csrfToken) else {
                        return pages.message(
                            "The form did not carry this session's CSRF token, so nothing was done. Reload the page and try again.",
                            title: "Refused", session: session, status: .forbidden)
                    }
                }
                return try await handler(request, context, SignedIn(secret: secret, session: session, form: form))
            } catch {
                let apiError = JSONErrorMiddleware<Context>.apiError(for: error, logger: context.logger)
                return pages.message(
                    apiError.message, title: apiError.status.reasonPhrase, session: session, status: apiError.status,
                    headers: apiError.headers)
            }
        }
    }

    /// The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), for
    /// `/admin` only, `Secure` when a trusted proxy says the client came over TLS.
    private func cookie(_ value: String, maxAge: Int, _ request: Request, _ context: Context) -> HTTPFields {
        let secure = credentials.addresses.isForwardedOverTLS(request, peer: context.remoteAddress) ? "; Secure" : ""
        return [.setCookie: "\(Self.cookieName)=\(value); Path=/admin; Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secure)"]
    }

    @Sendable func loginPage(_ request: Request, context: Context) async throws -> Response {
        if let secret = request.cookies[Self.cookieName]?.value, sessions.session(secret: secret) != nil {
            return AdminPages.redirect(to: "/admin")
        }
        let notice = request.uri.queryParameters["out"] != nil ? AdminPages.Notice.info("You are logged out.") : nil
        return pages.render("login", title: "Log in", session: nil, notice: notice)
    }

    @Sendable func login(_ request: Request, context: Context) async throws -> Response {
        do {
            let form = try await FormBody.fields(of: request, limit: bodyLimit)
            let given = form["token"] ?? ""
            try await credentials.check(given.isEmpty ? nil : .adminToken(given), of: request, context: context) {
                guard token.accepts(given) else { throw APIError(.invalidToken, message: "That is not the admin token.") }
            }
        } catch {
            let apiError = JSONErrorMiddleware<Context>.apiError(for: error, logger: context.logger)
            return pages.render(
                "login", title: "Log in", session: nil, status: apiError.status, notice: .error(apiError.message),
                headers: apiError.headers)
        }
        let (secret, _) = sessions.open()
        context.logger.notice("An operator logged in to the dashboard")
        return AdminPages.redirect(to: "/admin", headers: cookie(secret, maxAge: Int(AdminSessions.lifetime), request, context))
    }

    @Sendable func logout(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        sessions.close(secret: signedIn.secret)
        return AdminPages.redirect(to: "/admin/login?out=1", headers: cookie("", maxAge: 0, request, context))
    }

    // MARK: Pages

    @Sendable func overview(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        let now = clock.now()
        let tallies = try await storeCall { try await store.deviceTallies() }
        let summary = try await storeCall {
            try await store.notificationSummary(since: now.addingTimeInterval(-86_400), errorLimit: 5)
        }
        let idleDays = deviceIdleDays ?? Self.idleDaysShownWhenOff
        let idle = try await storeCall {
            try await store.idleDeviceCount(since: now.addingTimeInterval(-Double(idleDays) * 86_400), limit: 1_000_000)
        }
        let delivered = summary.byStatus[.delivered] ?? 0
        let finished = delivered + (summary.byStatus[.failed] ?? 0) + (summary.byStatus[.expired] ?? 0)
        let states: [DeliveryStatus] = [.pending, .delivered, .failed, .expired]
        return pages.render(
            "overview", title: "Overview", session: signedIn.session,
            values: [
                "outboxDepth": summary.pending, "delivered": delivered,
                "perHour": String(format: "%.1f", Double(delivered) / 24),
                "successRate": finished == 0 ? "–" : String(format: "%.1f %%", Double(delivered) * 100 / Double(finished)),
                "deviceTotal": tallies.reduce(0) { $0 + $1.count },
                "idleDevices": idle, "idleDays": idleDays,
                "idleRule": deviceIdleDays == nil ? "kept: HERALD_DEVICE_IDLE_DAYS is off" : "removed by HERALD_DEVICE_IDLE_DAYS",
                "devices": tallies.map {
                    ["platform": $0.platform.rawValue, "state": $0.isActive ? "active" : "inactive", "count": $0.count]
                },
                "states": states.map { ["status": $0.rawValue, "count": summary.byStatus[$0] ?? 0] },
                "errors": summary.topErrors.map { ["error": $0.error, "count": $0.count] },
            ])
    }

    @Sendable func notification(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        let title = "Notification"
        guard let query = request.uri.queryParameters["id"].map({ String($0).trimmingCharacters(in: .whitespaces) }),
            !query.isEmpty
        else {
            return pages.render("notification", title: title, session: signedIn.session)
        }
        guard let id = UUID(uuidString: query) else {
            return pages.render(
                "notification", title: title, session: signedIn.session, status: .badRequest,
                notice: .error("A notification id is a UUID, such as 3f2c8a0e-5b1d-4c2a-8e6f-0a7e5b1d4c2a."),
                values: ["query": query])
        }
        guard let notification = try await storeCall({ try await pipeline.notification(id: id) }) else {
            return pages.render(
                "notification", title: title, session: signedIn.session, status: .notFound,
                notice: .error("No notification has this id."), values: ["query": query])
        }
        let device = try await storeCall { try await store.device(id: notification.deviceID) }
        let lease = try await storeCall { try await store.lease(of: id) }
        let appEvents = try await storeCall { try await store.events(of: id) }
        let answer = try await storeCall { try await store.answers(of: [id])[id] }
        var details: [String: Any] = [
            "id": id.lowercasedText, "status": notification.status.rawValue,
            "history": AdminPages.history(
                of: notification, lease: notification.status == .pending ? lease : nil, appEvents: appEvents, answer: answer),
            "deviceID": notification.deviceID.lowercasedText, "platform": device?.platform.rawValue ?? "device removed",
            "pushType": notification.pushType.rawValue, "priority": notification.priority.apnsValue, "attempts": notification.attempts,
            "quota": notification.quotaDay.map { "counted on \($0)" } ?? "exempt",
            "lease": lease.map { "\($0.owner), until \(AdminPages.time($0.expiresAt))" } ?? "nobody",
            "payload": AdminPages.prettyPayload(notification.payload),
        ]
        if let device, showsEnvironment(of: device) { details["environment"] = device.environment.rawValue }
        if let collapseID = notification.collapseID { details["collapseID"] = collapseID }
        // End-to-end encrypted (docs/e2e.md): the payload shows the placeholder; the key id says which key opens it.
        if let keyID = notification.content?.encrypted?.keyID { details["encryptedKeyID"] = keyID }
        if let error = notification.lastError { details["lastError"] = error }
        if let providerID = notification.providerMessageID { details["providerID"] = providerID }
        let notice =
            request.uri.queryParameters["sent"] != nil
            ? AdminPages.Notice.info("Test notification accepted: \(notification.status.rawValue).") : nil
        return pages.render(
            "notification", title: title, session: signedIn.session, notice: notice,
            values: ["query": query, "notification": details])
    }

    @Sendable func device(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        let device = try await directory.device(userID: (signedIn.form["user_id"] ?? "").trimmingCharacters(in: .whitespaces))
        let quota: QuotaStatus
        do {
            quota = try await pipeline.quota(of: device)
        } catch {
            throw APIError.storeUnavailable("\(error)")
        }
        var facts: [String: Any] = [
            "id": device.id.lowercasedText, "platform": device.platform.rawValue,
            "environment": showsEnvironment(of: device) ? device.environment.rawValue : "–",
            "state": device.isActive ? "active" : "inactive", "stateClass": device.isActive ? "active" : "inactive",
            "used": quota.counters.successful, "maximum": quota.maximum, "remaining": quota.remaining,
            "attempts": quota.counters.attempts, "errors": quota.counters.errors, "resetsAt": AdminPages.time(quota.resetsAt),
            "created": AdminPages.time(device.createdAt), "updated": AdminPages.time(device.updatedAt),
        ]
        if let token = device.token { facts["token"] = AdminPages.maskedToken(token) }
        if let reason = device.inactiveReason, !device.isActive { facts["inactiveReason"] = reason }
        let recent = try await storeCall { try await store.recentNotifications(deviceID: device.id, limit: Self.listLength) }
        return pages.render(
            "device", title: "Device", session: signedIn.session,
            values: ["device": facts, "notifications": recent.map { AdminPages.row($0, platform: device.platform) }])
    }

    @Sendable func sendPage(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        pages.render(
            "send", title: "Send a test notification", session: signedIn.session,
            values: ["defaultTitle": "Test from Herald", "defaultBody": "Sent from the operator dashboard."])
    }

    @Sendable func send(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        let form = signedIn.form
        let values: [String: Any] = ["defaultTitle": form["title"] ?? "", "defaultBody": form["body"] ?? ""]
        do {
            var fields: JSONObject = [:]  // an empty field of the form is a missing one
            for name in ["title", "body"] {
                if let value = form[name], !value.isEmpty { fields[name] = .string(value) }
            }
            let notify = try NotifyRequest(fields)
            let device = try await directory.device(userID: (form["user_id"] ?? "").trimmingCharacters(in: .whitespaces))
            let receipt: SendReceipt
            do throws(SendError) {
                receipt = try await pipeline.send(notify.draft, to: device)
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
            context.logger.notice("An operator sent a test notification from the dashboard")
            return AdminPages.redirect(to: "/admin/notification?id=\(receipt.notification.id.lowercasedText)&sent=1")
        } catch let error as APIError {
            var message = error.message
            if let id = error.extra["id"]?.stringValue { message += " (notification \(id))" }
            return pages.render(
                "send", title: "Send a test notification", session: signedIn.session, status: error.status,
                notice: .error(message), headers: error.headers, values: values)
        }
    }

    @Sendable func live(_ request: Request, context: Context, signedIn: SignedIn) async throws -> Response {
        let recent = try await storeCall { try await store.recentNotifications(deviceID: nil, limit: Self.listLength) }
        var platforms: [Device.ID: Platform] = [:]
        for deviceID in Set(recent.map(\.deviceID)) {
            platforms[deviceID] = try await storeCall { try await store.device(id: deviceID) }?.platform
        }
        return pages.render(
            "live", title: "Live deliveries", session: signedIn.session, refreshSeconds: Self.liveRefreshSeconds,
            values: ["notifications": recent.map { AdminPages.row($0, platform: platforms[$0.deviceID]) }])
    }
}
