import Foundation
import HeraldCore

/// Maps a Home Assistant notify call to what the official relay would have sent the phone. The relay defines a payload
/// byte for byte for two providers (``relayPayloads``): APNs (`legacy.js`, this file; `live-activity.js` when the call
/// carries a `live_activity_token`, ``HomeAssistantLiveActivity``) and FCM (`android.js`,
/// ``HomeAssistantAndroidPayload``). Each is computed from the request alone, and only the one of the provider that
/// renders for the device is built. A device of any other provider (Web Push, one added since) gets the call's title
/// and message with what every surface can show from `data` (``HomeAssistantWebPush``), and no provider's raw part.
/// The relay's own fixtures hold Herald to it (`HomeAssistantRelayFixtureTests`); docs/homeassistant.md lists every row.
enum HomeAssistantPayload {
    /// A payload the relay defines for one provider.
    struct RelayPayload: Sendable {
        /// Whether a call with a `live_activity_token` is the Live Activity push instead (APNs: yes; the relay's Android
        /// path has no Live Activities, and ignores the token).
        var yieldsToLiveActivities: Bool
        var draft: @Sendable (HomeAssistantRequest, Date) throws -> NotificationDraft
    }

    /// The payloads the relay defines, by the platform of the provider each is for.
    static let relayPayloads: [Platform: RelayPayload] = [
        .apns: RelayPayload(yieldsToLiveActivities: true) { request, now in try legacy(request, now: now) },
        .fcm: RelayPayload(yieldsToLiveActivities: false) { request, _ in try HomeAssistantAndroidPayload.draft(for: request) },
    ]

    /// The draft of a call for a device whose payload `platform`'s provider renders (APNs' for a WebSocket-only device).
    static func draft(
        for request: HomeAssistantRequest, platform: Platform, now: Date, activityTimestamp: Int
    ) throws -> NotificationDraft {
        let relay = relayPayloads[platform]
        if let token = request.liveActivityToken, relay?.yieldsToLiveActivities ?? true {
            return try HomeAssistantLiveActivity.draft(for: request, token: token, timestamp: activityTimestamp, now: now)
        }
        if let relay { return try relay.draft(request, now) }
        // The relay's rules decide what the call says (title, message, a command's silence, headers, the daily
        // limit); the APNs payload they also write is left out: no provider of this device reads it.
        var base = try legacy(request, now: now)
        base.content.providerPayloads = [:]
        return HomeAssistantWebPush.draft(for: request, base: base)
    }

    /// The content of a call whose payload the relay defines for one provider: that payload as the provider's raw part,
    /// and the title and body it shows for every other surface (the WebSocket event, a device on another provider).
    static func content(raw payload: JSONObject, for platform: Platform, bodyPath: [String], title: String?, body: String?) -> NotificationContent {
        NotificationContent(
            title: title, body: body, providerPayloads: [platform.rawValue: .init(payload: payload, bodyPath: bodyPath)])
    }

    /// The content of an APNs payload built as the relay builds it: the title and body its alert shows.
    static func apnsContent(_ payload: JSONObject) -> NotificationContent {
        let alert = payload["aps"]?.objectValue?["alert"]
        let title = alert?.objectValue?["title"]?.stringValue
        let body = alert?.stringValue ?? alert?.objectValue?["body"]?.stringValue
        return content(raw: payload, for: .apns, bodyPath: ["aps", "alert", "body"], title: title, body: body)
    }

    /// `legacy.js`, row for row.
    private static func legacy(_ request: HomeAssistantRequest, now: Date) throws -> NotificationDraft {
        let data = FieldReader(request.data, path: "data")
        var push = LegacyPush(message: request.message, title: request.title)
        try push.takeAPNsBlocks(from: data)
        if let webhookID = request.webhookID { push.payload["webhook_id"] = .string(webhookID) }

        if request.isHomeAssistantApp {
            switch request.message {
            case "request_location_update", "request_location_updates":
                try push.command("request_location_update", data)
            case "clear_badge":
                push.aps = ["badge": 0]
                push.counts = false
            case "clear_notification":
                try push.command("clear_notification", data)
                if RelayRules.isTruthy(data.value("tag")), let tag = data.value("tag") { push.homeassistant["tag"] = tag }
                if let collapseID = push.headers.removeValue(forKey: "apns-collapse-id") {
                    push.homeassistant["collapseId"] = .string(collapseID)
                }
            case "update_complications", "update_widgets":
                try push.command(request.message, data)
            default:
                try push.alert(request, data)
            }
        }
        try push.normaliseSoundAndBadge()
        return try push.draft(now: now)
    }
}

/// The relay's `payload.apns` while `legacy.js` builds it: `aps`, the other top-level keys, and the headers.
private struct LegacyPush {
    var aps: JSONObject
    var payload: JSONObject = [:]
    /// `homeassistant` (a command, or `data.action_data`); written into `payload` at the end.
    var homeassistant: JSONObject = [:]
    var headers: [String: String] = [:]
    var counts = true

    init(message: String, title: String?) {
        var alert: JSONObject = ["body": .string(message)]
        if let title { alert["title"] = .string(title) }
        aps = ["alert": .object(alert), "sound": "default"]
    }

    /// `data.apns` replaces the whole block (its `payload` and `headers`), `data.apns_headers` the headers.
    mutating func takeAPNsBlocks(from data: FieldReader) throws {
        if let apns = try data.optionalObject("apns") {
            if let replaced = try apns.optionalObject("payload") {
                payload = replaced.object
                aps = try replaced.optionalObject("aps")?.object ?? [:]
                payload["aps"] = nil
                if case .object(let action)? = payload.removeValue(forKey: "homeassistant") { homeassistant = action }
            }
            if let given = try apns.optionalObject("headers") { headers = try Self.headers(given) }
        }
        if let given = try data.optionalObject("apns_headers") { headers = try Self.headers(given) }
    }

    /// A silent background push carrying `homeassistant.command`.
    mutating func command(_ name: String, _ data: FieldReader) throws {
        aps = ["contentAvailable": true]
        homeassistant = ["command": .string(name)]
        if let badge = try data.optionalObject("push")?.value("badge"), RelayRules.isTruthy(badge) { aps["badge"] = badge }
        counts = false
    }

    /// Text for the Home Assistant app to show, with everything its notification extensions read.
    mutating func alert(_ request: HomeAssistantRequest, _ data: FieldReader) throws {
        var needsCategory = false
        if let subtitle = data.value("subtitle"), RelayRules.isTruthy(subtitle) { setAlert("subtitle", subtitle) }
        if let push = try data.optionalObject("push") { aps.merge(push.object) { _, new in new } }
        if let actions = data.value("actions"), RelayRules.isTruthy(actions) {
            payload["actions"] = actions
            needsCategory = true
        }
        if let sound = data.value("sound"), RelayRules.isTruthy(sound) { aps["sound"] = sound }
        if request.osVersion?.hasPrefix("10.15") == true { stripSoundExtension() }
        if let entityID = data.value("entity_id"), RelayRules.isTruthy(entityID) {
            payload["entity_id"] = entityID
            needsCategory = true
        }
        // Kiosk commands' values: forwarded when present at all, `null` included.
        for key in ["level", "volume", "mode"] where request.data[key] != nil { payload[key] = request.data[key] }
        if let actionData = data.value("action_data"), RelayRules.isTruthy(actionData) {
            guard case .object(let object) = actionData else {
                throw APIError.invalidField("data.action_data", "data.action_data must be an object.")
            }
            homeassistant = object
            needsCategory = true
        }
        if let attachment = data.value("attachment"), RelayRules.isTruthy(attachment) {
            payload["attachment"] = attachment
            needsCategory = true
        }
        for (key, contentType) in [("video", "mpeg4"), ("image", "jpeg"), ("audio", "waveformaudio")] {
            guard let url = data.value(key), RelayRules.isTruthy(url) else { continue }
            guard case .object(var attachment) = payload["attachment"] ?? .object([:]) else {
                throw APIError.invalidField("data.attachment", "data.attachment must be an object.")
            }
            if attachment["content-type"] == nil { attachment["content-type"] = .string(contentType) }
            if attachment["url"] == nil { attachment["url"] = url }
            payload["attachment"] = .object(attachment)
            needsCategory = true
        }
        for key in ["url", "shortcut", "presentation_options"] {
            if let value = data.value(key), RelayRules.isTruthy(value) { payload[key] = value }
        }
        for key in ["notification_icon", "icon_url", "notification_icon_color", "color"] where request.data[key] != nil {
            payload[key] = request.data[key]
        }
        if case .string(let tag)? = request.data["tag"] {
            headers["apns-collapse-id"] = try CollapseIDRule.validated(tag, field: "data.tag")
        }
        if case .string(let group)? = request.data["group"] { aps["thread-id"] = .string(group) }

        if let category = aps["category"], RelayRules.isTruthy(category) {
            guard case .string(let text) = category else {
                throw APIError.invalidField("data.push.category", "data.push.category must be a string.")
            }
            aps["category"] = .string(text.uppercased())
        } else if needsCategory {
            aps["category"] = "DYNAMIC"
        }
        if !RelayRules.isTruthy(aps["contentAvailable"]) { aps["mutableContent"] = true }

        switch request.message {
        case "delete_alert":
            counts = false
            for key in ["title", "subtitle", "body"] { setAlert(key, nil) }
            aps["sound"] = nil
        case "test_push_source":
            // The relay names itself; the app shows which path a test push took.
            setAlert("title", .string(request.message))
            setAlert("body", "apns-fcm")
        default:
            break
        }
    }

    /// For every app: `sound: "none"` removes the sound, a sound object's `volume` and `critical` become numbers (a
    /// critical alert with a volume above 0 does not count), a badge becomes a number.
    mutating func normaliseSoundAndBadge() throws {
        switch aps["sound"] {
        case .string(let name)? where name.lowercased() == "none":
            aps["sound"] = nil
        case .object(var sound)?:
            if let volume = sound["volume"], RelayRules.isTruthy(volume) {
                sound["volume"] = try RelayRules.number(volume, path: "data.push.sound.volume")
            }
            if let critical = sound["critical"], RelayRules.isTruthy(critical), critical != .bool(true) {
                sound["critical"] = try RelayRules.number(critical, path: "data.push.sound.critical", wholeNumber: true)
            }
            if RelayRules.isTruthy(sound["critical"]), (sound["volume"]?.doubleValue ?? 0) > 0 { counts = false }
            aps["sound"] = .object(sound)
        default:
            break
        }
        if let badge = aps["badge"], RelayRules.isTruthy(badge) {
            aps["badge"] = try RelayRules.number(badge, path: "data.push.badge")
        }
    }

    func draft(now: Date) throws -> NotificationDraft {
        let isBackground = RelayRules.isTruthy(aps["contentAvailable"])
        var body = payload
        body["aps"] = .object(try RelayRules.apsOnTheWire(aps))
        if !homeassistant.isEmpty { body["homeassistant"] = .object(homeassistant) }
        var draft = NotificationDraft(
            pushType: isBackground ? .background : .alert, priority: isBackground ? .normal : .high,
            content: HomeAssistantPayload.apnsContent(body), isExemptFromQuota: !counts)
        try HomeAssistantAPNsHeaders.apply(headers, to: &draft, now: now)
        return draft
    }

    private mutating func setAlert(_ key: String, _ value: JSONValue?) {
        guard case .object(var alert)? = aps["alert"] ?? .object([:]) else { return }
        alert[key] = value
        aps["alert"] = .object(alert)
    }

    private mutating func stripSoundExtension() {
        switch aps["sound"] {
        case .string(let name)?:
            aps["sound"] = .string(RelayRules.soundName(withoutExtension: name))
        case .object(var sound)?:
            guard case .string(let name)? = sound["name"] else { return }
            sound["name"] = .string(RelayRules.soundName(withoutExtension: name))
            aps["sound"] = .object(sound)
        default:
            break
        }
    }

    private static func headers(_ given: FieldReader) throws -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in given.object {
            let path = given.path(of: name)
            switch value {
            case .string(let text): headers[name.lowercased()] = text
            case .int(let int): headers[name.lowercased()] = String(int)
            default: throw APIError.invalidField(path, "\(path) must be a string or a whole number.")
            }
        }
        return headers
    }
}
