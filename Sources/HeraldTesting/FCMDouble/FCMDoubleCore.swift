import Foundation
import HeraldCore
import NIOCore
import Synchronization

/// The FCM double's state and decisions, shared by its connections and guarded by one lock.
///
/// The NIO handlers (``DoubleStreamHandler``, ``DoubleHTTP1Handler``) only collect a request, ask ``handle(_:)``
/// what to do and do it. The work that needs no state (decoding the body, verifying an assertion's RSA signature)
/// is done before taking the lock.
final class FCMDoubleCore: DoubleRequestHandling {
    /// An access token the double issued.
    struct IssuedAccessToken: Sendable {
        var expiresAt: Date
        /// Whether its scopes allow sending (`firebase.messaging` or `cloud-platform`).
        var allowsMessaging: Bool
        var isRevoked = false
    }

    struct State {
        /// Set once the port is known, before ``FCMDouble/start(projectID:serviceAccount:clock:accessTokenLifetime:certificates:)`` returns.
        var tokenURI = ""
        var accessTokenLifetime: TimeInterval
        var accessTokens: [String: IssuedAccessToken] = [:]
        var marks: [String: FCMDouble.TokenMark] = [:]
        var faults = FaultQueue<FCMDouble.Fault>()
        /// Statuses for the next token requests that pass validation.
        var tokenFailures = FaultQueue<Int>()
        var responseDelay: Duration?
        var requests: [FCMDouble.RecordedRequest] = []
        var tokenRequests: [FCMDouble.TokenRequest] = []
        var acceptedMessages: [FCMDouble.AcceptedMessage] = []
        var counters = FCMDouble.Counters()
        var connections: [Int: any Channel] = [:]
        var nextConnectionID = 1
        var isShutDown = false
    }

    let projectID: String
    let serviceAccount: FCMTestServiceAccount
    let clock: any WallClock
    let state: Mutex<State>

    init(projectID: String, serviceAccount: FCMTestServiceAccount, clock: any WallClock, accessTokenLifetime: TimeInterval) {
        self.projectID = projectID
        self.serviceAccount = serviceAccount
        self.clock = clock
        self.state = Mutex(State(accessTokenLifetime: accessTokenLifetime))
    }

    // MARK: Control

    func setTokenURI(_ uri: String) { state.withLock { $0.tokenURI = uri } }
    func mark(_ token: String, as mark: FCMDouble.TokenMark?) { state.withLock { $0.marks[token] = mark } }
    func inject(_ fault: FCMDouble.Fault, count: Int) { state.withLock { $0.faults.append(fault, count: count) } }
    func failNextTokenRequests(_ count: Int, status: Int) {
        state.withLock { $0.tokenFailures.append(status, count: count) }
    }
    func clearFaults() {
        state.withLock { state in
            state.faults.removeAll()
            state.tokenFailures.removeAll()
        }
    }
    func setResponseDelay(_ delay: Duration?) { state.withLock { $0.responseDelay = delay } }
    func setAccessTokenLifetime(_ seconds: TimeInterval) { state.withLock { $0.accessTokenLifetime = seconds } }
    func revokeAccessTokens() {
        state.withLock { state in
            for token in state.accessTokens.keys { state.accessTokens[token]?.isRevoked = true }
        }
    }
    var acceptedMessages: [FCMDouble.AcceptedMessage] { state.withLock { $0.acceptedMessages } }
    var requests: [FCMDouble.RecordedRequest] { state.withLock { $0.requests } }
    var tokenRequests: [FCMDouble.TokenRequest] { state.withLock { $0.tokenRequests } }
    var counters: FCMDouble.Counters { state.withLock { $0.counters } }
    func resetLog() {
        state.withLock { state in
            state.requests.removeAll()
            state.tokenRequests.removeAll()
            state.acceptedMessages.removeAll()
        }
    }

    // MARK: Connections

    /// A TCP connection was accepted; returns its id, or `nil` when the double is shutting down.
    func connectionOpened(_ channel: any Channel) -> Int? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = channel
            state.counters.connections += 1
            return id
        }
    }

    func connectionClosed(_ id: Int) {
        _ = state.withLock { $0.connections.removeValue(forKey: id) }
    }

    /// Marks the double as shutting down and returns the open connections to close.
    func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShutDown = true
            return Array(state.connections.values)
        }
    }

    // MARK: Requests

    /// Routes a request: `POST /token` to the token endpoint, anything else to the send endpoint's checks.
    func handle(_ request: DoubleRequest) -> DoubleAction {
        let now = clock.now()
        let path = request.header(":path") ?? ""
        let route = String(path.prefix { $0 != "?" })
        if request.header(":method") == "POST", route == "/token" {
            return handleTokenRequest(request, now: now)
        }
        return handleSendRequest(request, route: route, now: now)
    }

    private func handleTokenRequest(_ request: DoubleRequest, now: Date) -> DoubleAction {
        let form = FCMTokenEndpoint.formFields(request.body)
        let assertion = form["assertion"].flatMap { CompactJWT($0) }
        let tokenURI = state.withLock { $0.tokenURI }
        let verdict = FCMTokenEndpoint.check(
            form: form, assertion: assertion, account: serviceAccount, tokenURI: tokenURI, now: now)
        return state.withLock { state in
            state.counters.tokenRequests += 1
            let outcome: FCMDouble.TokenOutcome
            switch verdict {
            case .failure(let refusal):
                outcome = .refused(status: 400, error: refusal.error, description: refusal.description)
            case .success(let scopes):
                if let status = state.tokenFailures.next() {
                    outcome = FCMTokenEndpoint.injectedFailure(status: status)
                } else {
                    let accessToken = "ya29." + TestKeys.random(152, from: Self.tokenAlphabet)
                    let lifetime = state.accessTokenLifetime
                    state.accessTokens[accessToken] = IssuedAccessToken(
                        expiresAt: now.addingTimeInterval(lifetime),
                        allowsMessaging: scopes.contains(FCMDouble.messagingScope) || scopes.contains(FCMDouble.cloudPlatformScope))
                    state.counters.tokensIssued += 1
                    outcome = .granted(accessToken: accessToken, expiresIn: Int(lifetime))
                }
            }
            state.tokenRequests.append(
                FCMDouble.TokenRequest(
                    sequence: state.tokenRequests.count + 1, connectionID: request.connectionID, receivedAt: now,
                    contentType: request.header("content-type"), form: form, assertionHeader: assertion?.header,
                    assertionClaims: assertion?.claims, outcome: outcome))
            return .respond(FCMTokenEndpoint.response(outcome), raiseStreamsTo: nil, delay: state.responseDelay)
        }
    }

    private static let tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    private static let sendPathPrefix = "/v1/projects/"
    private static let sendPathSuffix = "/messages:send"

    private func handleSendRequest(_ request: DoubleRequest, route: String, now: Date) -> DoubleAction {
        // `POST /v1/projects/<project>/messages:send`; anything else is not routed.
        var project: String?
        if request.header(":method") == "POST", route.hasPrefix(Self.sendPathPrefix), route.hasSuffix(Self.sendPathSuffix) {
            let name = route.dropFirst(Self.sendPathPrefix.count).dropLast(Self.sendPathSuffix.count)
            if !name.isEmpty, !name.contains("/") { project = String(name) }
        }
        let body = FCMMessageValidation.parse(request.body)
        let accessToken = Self.bearerToken(request.header("authorization"))

        return state.withLock { state in
            state.counters.sendRequests += 1
            var refusal: SendRefusal?
            if let project {
                refusal = state.authorize(accessToken, project: project, projectID: projectID, now: now).map(SendRefusal.google)
                    ?? body.refusal.map(SendRefusal.google)
            } else {
                refusal = .notFound(route)
            }
            if refusal == nil, case .token(let token)? = body.target, let mark = state.marks[token] {
                let error: GoogleError =
                    switch mark {
                    case .unregistered: .fcm(.unregistered, projectID: projectID)
                    case .senderIDMismatch: .fcm(.senderIDMismatch, projectID: projectID)
                    case .invalid: FCMMessageValidation.invalidRegistrationToken
                    }
                refusal = .google(error)
            }

            let decision: Decision =
                if let refusal { .refuse(refusal) } else if let fault = state.faults.next() { .fault(fault) } else { .accept }
            let action: DoubleAction
            let outcome: FCMDouble.Outcome
            var messageName: String?
            var answeredError: FCMDouble.AnsweredError?
            switch decision {
            case .refuse(let refusal):
                action = .respond(refusal.response, raiseStreamsTo: nil, delay: state.responseDelay)
                answeredError = refusal.summary
                outcome = .answered(status: refusal.summary.code)
                state.counters.sendsRefused += 1
            case .fault(.error(let code, let retryAfter)):
                let error = GoogleError.fcm(code, retryAfter: retryAfter, projectID: projectID)
                action = .respond(error.response, raiseStreamsTo: nil, delay: state.responseDelay)
                answeredError = error.summary
                outcome = .answered(status: error.code)
                state.counters.sendsRefused += 1
            case .fault(.stall):
                action = .stall(raiseStreamsTo: nil)
                outcome = .stalled
            case .fault(.dropConnection):
                action = .dropConnection
                outcome = .droppedConnection
            case .accept:
                let name =
                    body.validateOnly
                    ? "projects/\(projectID)/messages/fake_message_id"
                    : "projects/\(projectID)/messages/\(TestKeys.random(1, from: "123456789"))\(TestKeys.random(18, from: "0123456789"))"
                messageName = name
                action = .respond(
                    DoubleResponse(
                        headers: [(":status", "200"), ("content-type", "application/json; charset=UTF-8")],
                        body: (try? JSONValue.object(["name": .string(name)]).encoded()) ?? Data()),
                    raiseStreamsTo: nil, delay: state.responseDelay)
                outcome = .answered(status: 200)
                if body.validateOnly {
                    state.counters.sendsValidated += 1
                } else if let target = body.target, let accessToken {
                    state.counters.sendsAccepted += 1
                    state.acceptedMessages.append(
                        FCMDouble.AcceptedMessage(
                            name: name, target: target, message: body.message ?? [:], accessToken: accessToken,
                            connectionID: request.connectionID, receivedAt: now))
                }
            }
            state.requests.append(
                FCMDouble.RecordedRequest(
                    sequence: state.requests.count + 1, connectionID: request.connectionID, streamID: request.streamID,
                    receivedAt: now, headers: request.headers, body: request.body, accessToken: accessToken,
                    message: body.message, validateOnly: body.validateOnly, outcome: outcome, messageName: messageName,
                    error: answeredError))
            return action
        }
    }

    /// The token of an `authorization: Bearer <token>` header (the scheme in any case); `""` when the header holds
    /// something else, `nil` when there is none.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization, !authorization.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        guard authorization.lowercased().hasPrefix("bearer ") else { return "" }
        return authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
    }
}

/// What becomes of a send request once checked.
private enum Decision {
    case refuse(SendRefusal)
    case fault(FCMDouble.Fault)
    case accept
}

/// Why a send request is refused: an unrouted method or path (Google's front end answers its HTML 404 page, for a
/// `GET` of `messages:send` too), or a Google API error.
enum SendRefusal: Sendable {
    case notFound(String)
    case google(GoogleError)

    var response: DoubleResponse {
        switch self {
        case .google(let error):
            return error.response
        case .notFound(let path):
            let page =
                "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 404 (Not Found)!!1</title>\n"
                + "  <p><b>404.</b> <ins>That’s an error.</ins>\n  <p>The requested URL <code>\(path)</code> was not found "
                + "on this server.  <ins>That’s all we know.</ins>\n"
            return DoubleResponse(
                headers: [(":status", "404"), ("content-type", "text/html; charset=UTF-8")], body: Data(page.utf8))
        }
    }

    var summary: FCMDouble.AnsweredError {
        switch self {
        case .google(let error): error.summary
        case .notFound: FCMDouble.AnsweredError(code: 404, status: "NOT_FOUND", message: "Not Found", errorCode: nil)
        }
    }
}

extension FCMDoubleCore.State {
    /// The checks Google's front end makes before FCM reads the body, in its order: credentials (401), scopes (403),
    /// then the project (403, `cloudmessaging.messages.create` denied). The project is judged after the credentials
    /// because Google cannot tell whether a caller may use a project before knowing who calls; an unknown project
    /// is answered like a forbidden one ("or it may not exist").
    func authorize(_ accessToken: String?, project: String, projectID: String, now: Date) -> GoogleError? {
        guard let accessToken else { return .credentialsMissing }
        guard let issued = accessTokens[accessToken], !issued.isRevoked else { return .invalidCredentials(reason: nil) }
        guard now < issued.expiresAt else { return .invalidCredentials(reason: "ACCESS_TOKEN_EXPIRED") }
        guard issued.allowsMessaging else { return .insufficientScopes }
        guard project == projectID else { return .permissionDenied(project: project) }
        return nil
    }
}
