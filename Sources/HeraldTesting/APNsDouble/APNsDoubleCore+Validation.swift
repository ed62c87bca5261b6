import Foundation
import HeraldCore

/// The outcome of checking one request against Apple's rules.
struct Verdict: Sendable {
    var rejection: Rejection?
    var providerToken: APNsDouble.DecodedProviderToken?
    var providerTokenIsValid = false
    var requestAPNsID: String?
    var warnings: [String] = []
}

/// Apple's push types and the topic suffix each needs (§1.3 of the reference).
enum APNsPushTypes {
    static let topicSuffixes: [String: String] = [
        "alert": "", "background": "", "location": ".location-query", "voip": ".voip",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "mdm": "",
        "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt", "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]
}

extension APNsDoubleCore.State {
    /// Checks a request in the order of the reference's §6.2 (first failure wins) and updates the
    /// connection's token state when the provider token is accepted.
    mutating func validate(
        _ request: DoubleRequest, now: Date, environment: PushEnvironment, options: APNsDouble.Options
    ) -> Verdict {
        var verdict = Verdict()
        func reject(_ status: Int, _ reason: String, timestamp: Date? = nil) -> Verdict {
            verdict.rejection = Rejection(status: status, reason: reason, timestamp: timestamp)
            return verdict
        }
        let headers = request.headers
        func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }

        for header in headers where header.indexed && (header.name == "authorization" || header.name == ":path") {
            verdict.warnings.append("\(header.name) was sent with HPACK indexing; Apple asks for literal without indexing")
        }

        // 1–3: method and path.
        guard value(":method") == "POST" else { return reject(405, "MethodNotAllowed") }
        let path = value(":path") ?? ""
        if path == "/3/device" || path == "/3/device/" { return reject(400, "MissingDeviceToken") }
        guard path.hasPrefix(APNsDoubleCore.devicePathPrefix) else { return reject(404, "BadPath") }
        let deviceToken = String(path.dropFirst(APNsDoubleCore.devicePathPrefix.count))
        guard !deviceToken.contains("/"), !deviceToken.contains("?") else { return reject(404, "BadPath") }

        // 4: repeated apns-* or authorization headers.
        let singleHeaders = headers.map(\.name).filter { $0.hasPrefix("apns-") || $0 == "authorization" }
        guard Set(singleHeaders).count == singleHeaders.count else { return reject(400, "DuplicateHeaders") }

        // 5: apns-id.
        if let apnsID = value("apns-id") {
            guard apnsID.utf8.count == 36, UUID(uuidString: apnsID) != nil else { return reject(400, "BadMessageId") }
            verdict.requestAPNsID = apnsID
        }

        // 6–13: provider token.
        guard let authorization = value("authorization"), authorization.lowercased().hasPrefix("bearer "),
            case let jwt = Self.trimmingWhitespace(authorization.dropFirst("bearer ".count)), !jwt.isEmpty
        else { return reject(403, "MissingProviderToken") }
        let inspection = inspectProviderToken(jwt)
        verdict.providerToken = inspection.decoded
        guard let token = inspection.verified, let key = keys[token.keyID] else {
            return reject(403, "InvalidProviderToken")
        }
        var connection = connections[request.connectionID] ?? APNsDoubleCore.ConnectionState()
        guard key.environments.contains(environment) else { return reject(403, "BadEnvironmentKeyIdInToken") }
        if let firstKeyID = connection.firstKeyID, firstKeyID != token.keyID {
            return reject(403, "UnrelatedKeyIdInToken")
        }
        guard token.teamID == key.teamID, connection.teamID == nil || connection.teamID == token.teamID else {
            return reject(403, "InvalidProviderToken")
        }
        let age = now.timeIntervalSince1970 - Double(token.issuedAt)
        if age > 3_600 { return reject(403, "ExpiredProviderToken") }
        if -age > options.allowedClockSkew { return reject(403, "InvalidProviderToken") }
        if let current = connection.currentToken, current != token.jwt {
            let tooSoon =
                switch options.tokenUpdateRule {
                case .strict: now.timeIntervalSince(connection.currentTokenFirstUsed) < 1_200
                case .lenient: token.issuedAt - connection.currentTokenIssuedAt < 1_200
                }
            if tooSoon { return reject(429, "TooManyProviderTokenUpdates") }
        }
        if connection.currentToken != token.jwt {
            connection.currentToken = token.jwt
            connection.currentTokenIssuedAt = token.issuedAt
            connection.currentTokenFirstUsed = now
        }
        connection.teamID = token.teamID
        connection.firstKeyID = connection.firstKeyID ?? token.keyID
        if connections[request.connectionID] != nil { connections[request.connectionID] = connection }
        verdict.providerTokenIsValid = true

        // 14–19: topic and push type.
        guard let topic = value("apns-topic"), !topic.isEmpty else { return reject(400, "MissingTopic") }
        let bundles = topics.sorted { $0.count > $1.count }
        guard let bundle = bundles.first(where: { topic == $0 || topic.hasPrefix($0 + ".") }),
            APNsPushTypes.topicSuffixes.values.contains(String(topic.dropFirst(bundle.count)))
        else { return reject(400, "TopicDisallowed") }
        let pushType = value("apns-push-type")
        if let pushType, APNsPushTypes.topicSuffixes[pushType] == nil { return reject(400, "InvalidPushType") }
        if pushType == nil {
            if options.requirePushType { return reject(400, "InvalidPushType") }
            verdict.warnings.append("apns-push-type is missing")
        }
        if let pushType, let suffix = APNsPushTypes.topicSuffixes[pushType], pushType != "mdm",
            topic != bundle + suffix
        {
            return reject(400, "InvalidPushType")
        }

        // 20–23: priority, expiration, collapse id.
        let priority = value("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) { return reject(400, "BadPriority") }
        if pushType == "background", priority == nil || priority == "10" { return reject(400, "BadPriority") }
        if let expiration = value("apns-expiration"),
            expiration.isEmpty || !expiration.utf8.allSatisfy({ (48...57).contains($0) })
        {
            return reject(400, "BadExpirationDate")
        }
        if let collapseID = value("apns-collapse-id"), collapseID.utf8.count > 64 { return reject(400, "BadCollapseId") }

        // 24–25: device token.
        guard options.deviceTokenLengths.contains(deviceToken.utf8.count), deviceToken.utf8.count % 2 == 0,
            Secrets.isHex(deviceToken)
        else { return reject(400, "BadDeviceToken") }
        let mark = marks[deviceToken.lowercased()]
        if mark == .badDeviceToken { return reject(400, "BadDeviceToken") }

        // 27–32: payload.
        if value("content-encoding") != nil { return reject(400, "PayloadEmpty") }
        if request.body.isEmpty { return reject(400, "PayloadEmpty") }
        let limit = pushType == "voip" ? 5_120 : 4_096
        if request.body.count > limit { return reject(413, "PayloadTooLarge") }
        guard case .object(let payload)? = try? JSONValue.decode(request.body) else { return reject(400, "PayloadEmpty") }
        let payloadWarnings = Self.payloadWarnings(payload, pushType: pushType)
        if options.requirePushType, !payloadWarnings.isEmpty { return reject(400, "InvalidPushType") }
        verdict.warnings += payloadWarnings

        // 33: unregistered or expired token.
        switch mark {
        case .unregistered(let since): return reject(410, "Unregistered", timestamp: since)
        case .expired(let since): return reject(410, "ExpiredToken", timestamp: since)
        case .badDeviceToken, nil: break
        }

        // 34: too many requests to one device.
        if let limit = options.perDeviceTokenLimit {
            let key = deviceToken.lowercased()
            var recent = (recentRequestsByDeviceToken[key] ?? []).filter { now.timeIntervalSince($0) < limit.perSeconds }
            recent.append(now)
            recentRequestsByDeviceToken[key] = recent
            if recent.count > limit.requests { return reject(429, "TooManyRequests") }
        }
        return verdict
    }

    /// `text` without the spaces and tabs around it (Foundation's trimming only when there are any).
    static func trimmingWhitespace(_ text: Substring) -> String {
        let edges = [text.unicodeScalars.first, text.unicodeScalars.last].compactMap { $0 }
        guard edges.contains(where: CharacterSet.whitespaces.contains) else { return String(text) }
        return text.trimmingCharacters(in: .whitespaces)
    }

    /// The token decoded and verified against the registered keys. Both are pure functions of the token and the
    /// keys, so each distinct token is inspected once until a key is registered: a provider sends the same token for
    /// 20 to 60 minutes, and the ES256 check and base64url decoding of every request took two fifths of the double's
    /// CPU in the benchmark (docs/performance.md, "A cheaper double").
    mutating func inspectProviderToken(_ jwt: String) -> ProviderTokenVerifier.Inspection {
        if let known = tokenInspections[jwt] { return known }
        let inspection = ProviderTokenVerifier.inspect(jwt, keys: keys)
        if tokenInspections.count >= 64 { tokenInspections.removeAll(keepingCapacity: true) }
        tokenInspections[jwt] = inspection
        return inspection
    }

    /// What Apple tolerates but a correct sender would not do (§6.2 #31).
    static func payloadWarnings(_ payload: JSONObject, pushType: String?) -> [String] {
        guard let aps = payload["aps"]?.objectValue else { return ["payload has no aps dictionary"] }
        let visible = aps["alert"] != nil || aps["badge"] != nil || aps["sound"] != nil
        switch pushType {
        case "background":
            var warnings: [String] = []
            if aps["content-available"] != .int(1) { warnings.append("background push without content-available: 1") }
            if visible { warnings.append("background push with alert, badge or sound") }
            return warnings
        case "alert":
            return visible ? [] : ["alert push without alert, badge or sound"]
        case "liveactivity":
            return liveActivityWarnings(aps)
        default:
            return []
        }
    }

    /// What ActivityKit needs of a Live Activity push's `aps` (reference: live-activities.md): an integer
    /// `timestamp`, an `event`, a `content-state` object, on start `attributes-type` and `attributes`, a
    /// `dismissal-date` only on end, numeric dates and relevance. Apple accepts a push that breaks these; the device
    /// drops it.
    static func liveActivityWarnings(_ aps: JSONObject) -> [String] {
        var warnings: [String] = []
        guard case .int? = aps["timestamp"] else { return ["live activity push without an integer timestamp"] }
        // Read as the one typed Live Activity message Herald builds (HeraldCore's `LiveActivityMessage`).
        guard let message = LiveActivityMessage(aps: aps) else { return ["live activity push whose event is not start, update or end"] }
        let event = message.event.rawValue
        if aps["content-state"]?.objectValue == nil, message.event != .end { warnings.append("live activity \(event) without a content-state object") }
        if message.event == .start {
            if message.attributesType?.isEmpty ?? true { warnings.append("live activity start without attributes-type") }
            if message.attributes == nil { warnings.append("live activity start without an attributes object") }
        } else if aps["attributes-type"] != nil || aps["attributes"] != nil {
            warnings.append("attributes on a live activity \(event)")
        }
        if message.dismissalDate != nil, message.event != .end { warnings.append("dismissal-date on a live activity \(event)") }
        if aps["input-push-token"] != nil, message.event != .start { warnings.append("input-push-token on a live activity \(event)") }
        let numbers: [(String, JSONValue?)] = [
            ("dismissal-date", message.dismissalDate), ("stale-date", message.staleDate), ("relevance-score", message.relevanceScore),
        ]
        for (key, value) in numbers where value != nil && value?.doubleValue == nil { warnings.append("\(key) is not a number") }
        return warnings
    }
}
