import Crypto
import Foundation
import HeraldCore
import NIOCore
import Synchronization

/// The Web Push double's state and decisions, under one lock; the checks that need no state run before taking it.
final class WebPushDoubleCore: DoubleRequestHandling {
    struct State {
        var subscriptions: [String: WebPushDouble.Subscription] = [:]
        var gone: [String: Int] = [:]
        var faults = FaultQueue<WebPushDouble.Fault>()
        var received: [WebPushDouble.ReceivedMessage] = []
        var refused: [WebPushDouble.RefusedRequest] = []
        var requests: [WebPushDouble.RecordedRequest] = []
        var drops = 0
        var connections: [Int: any Channel] = [:]
        var nextConnectionID = 1
        var nextMessage = 1
        var deliveredCount = 0
        var inFlight = 0
        var maximumInFlight = 0
        var isShutDown = false
    }

    let clock: any WallClock
    let state = Mutex(State())

    init(clock: any WallClock) {
        self.clock = clock
    }

    func add(_ subscription: WebPushDouble.Subscription) { state.withLock { $0.subscriptions[subscription.id] = subscription } }
    func markGone(_ id: String, status: Int) { state.withLock { $0.gone[id] = status } }
    func inject(_ fault: WebPushDouble.Fault, count: Int) { state.withLock { $0.faults.append(fault, count: count) } }
    func clearFaults() { state.withLock { $0.faults.removeAll() } }
    var received: [WebPushDouble.ReceivedMessage] { state.withLock { $0.received } }
    var refused: [WebPushDouble.RefusedRequest] { state.withLock { $0.refused } }
    var requests: [WebPushDouble.RecordedRequest] { state.withLock { $0.requests } }
    func dropNext(_ count: Int) { state.withLock { $0.drops += count } }
    var maximumInFlight: Int { state.withLock { $0.maximumInFlight } }
    var inFlight: Int { state.withLock { $0.inFlight } }
    var deliveredCount: Int { state.withLock { $0.deliveredCount } }

    func connectionOpened(_ channel: any Channel) -> Int? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = channel
            return id
        }
    }

    func connectionClosed(_ id: Int) { _ = state.withLock { $0.connections.removeValue(forKey: id) } }

    func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShutDown = true
            return Array(state.connections.values)
        }
    }

    func handle(_ request: DoubleRequest) -> DoubleAction {
        let path = request.header(":path") ?? ""
        let authorization = request.header("authorization")
        func record(_ state: inout State, _ status: Int?) {
            state.requests.append(.init(connectionID: request.connectionID, authorization: authorization, status: status))
        }
        let dropped = state.withLock { state in
            guard state.drops > 0 else { return false }
            state.drops -= 1
            record(&state, nil)
            return true
        }
        if dropped { return .dropConnection }
        func refuse(_ status: Int, _ reason: String) -> DoubleAction {
            state.withLock { state in
                state.refused.append(.init(path: path, status: status, reason: reason))
                record(&state, status)
            }
            return .respond(Self.response(status, body: reason), raiseStreamsTo: nil, delay: nil)
        }
        guard request.header(":method") == "POST" else { return refuse(405, "method not allowed") }
        guard path.hasPrefix("/push/") else { return refuse(404, "no such endpoint") }
        let id = String(path.dropFirst("/push/".count))
        let (subscription, goneStatus) = state.withLock { ($0.subscriptions[id], $0.gone[id]) }
        guard let subscription else { return refuse(404, "no such subscription") }
        if let goneStatus { return refuse(goneStatus, "push subscription has unsubscribed or expired") }
        let origin = "https://\(request.header(":authority") ?? "")"
        let claims: JSONObject
        switch VAPIDCheck.verify(request.header("authorization"), audience: origin, now: clock.now()) {
        case .success(let verified): claims = verified
        case .failure(let reason): return refuse(403, reason)
        }
        guard request.header("content-encoding") == "aes128gcm" else { return refuse(400, "Content-Encoding must be aes128gcm") }
        guard let ttl = request.header("ttl"), Int(ttl).map({ $0 >= 0 }) == true else { return refuse(400, "TTL is required") }
        let plaintext: Data
        do {
            plaintext = try WebPushDecryption.decrypt(request.body, for: subscription.subscriber).plaintext
        } catch {
            return refuse(400, "cannot decrypt the message: \(error)")
        }
        var headers: [String: String] = [:]
        for header in request.headers where !header.name.hasPrefix(":") { headers[header.name] = header.value }
        let json = (try? JSONValue.decode(plaintext))?.objectValue ?? [:]
        return state.withLock { state in
            let fault = state.faults.next()
            let status = fault?.status ?? 201
            record(&state, status)
            state.received.append(
                .init(subscriptionID: id, headers: headers, plaintext: plaintext, json: json, claims: claims, status: status))
            let number = state.nextMessage
            state.nextMessage += 1
            guard let fault else {
                state.deliveredCount += 1
                return .respond(
                    DoubleResponse(headers: [(":status", "201"), ("location", "/message/\(number)")], body: nil),
                    raiseStreamsTo: nil, delay: nil)
            }
            var response = Self.response(fault.status, body: fault.body)
            if let retryAfter = fault.retryAfter { response.headers.append(("retry-after", String(retryAfter))) }
            if fault.delay != nil {
                state.inFlight += 1
                state.maximumInFlight = max(state.maximumInFlight, state.inFlight)
            }
            return .respond(response, raiseStreamsTo: nil, delay: fault.delay)
        }
    }

    func answerWritten(_ response: DoubleResponse) {
        state.withLock { state in if state.inFlight > 0 { state.inFlight -= 1 } }
    }

    private static func response(_ status: Int, body: String) -> DoubleResponse {
        DoubleResponse(headers: [(":status", String(status)), ("content-type", "text/plain")], body: body.isEmpty ? nil : Data(body.utf8))
    }
}

/// RFC 8292's checks of `Authorization: vapid t=<JWT>, k=<key>`.
enum VAPIDCheck {
    enum Verdict {
        case success(JSONObject)
        case failure(String)
    }

    static func verify(_ header: String?, audience: String, now: Date) -> Verdict {
        guard let header, header.lowercased().hasPrefix("vapid ") else { return .failure("Authorization must be vapid t=…, k=…") }
        var parameters: [String: String] = [:]
        for part in header.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { parameters[pair[0]] = pair[1] }
        }
        guard let token = parameters["t"], let jwt = CompactJWT(token) else { return .failure("vapid t is not a JWT") }
        guard let keyText = parameters["k"], let keyBytes = Base64URL.decode(keyText),
            let key = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else { return .failure("vapid k is not a P-256 public key") }
        guard jwt.header["alg"]?.stringValue == "ES256" else { return .failure("the JWT's alg must be ES256") }
        guard let signature = jwt.signature.flatMap({ try? P256.Signing.ECDSASignature(rawRepresentation: $0) }),
            key.isValidSignature(signature, for: jwt.signingInput)
        else { return .failure("the JWT's signature does not verify with k") }
        guard jwt.claims["aud"]?.stringValue == audience else { return .failure("aud must be \(audience)") }
        guard let exp = jwt.claims["exp"]?.doubleValue, exp > now.timeIntervalSince1970,
            exp <= now.timeIntervalSince1970 + 86_400
        else { return .failure("exp must be in the future and at most 24 hours ahead") }
        guard let sub = jwt.claims["sub"]?.stringValue, sub.hasPrefix("mailto:") || sub.hasPrefix("https:") else {
            return .failure("sub must be a mailto: or https: contact")
        }
        return .success(jwt.claims)
    }
}
