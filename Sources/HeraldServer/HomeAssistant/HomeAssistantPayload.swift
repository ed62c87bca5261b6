import Foundation
import HeraldCore

/// Maps a Home Assistant notify call to the notification the Home Assistant app expects from its official relay: for
/// APNs devices what the iOS app gets (`legacy.js`), for FCM devices what the Android app gets
/// (``HomeAssistantAndroidPayload``). The tables in docs/homeassistant.md list every row.
enum HomeAssistantPayload {
    /// Messages that are commands to the app rather than text to show: silent background pushes, exempt from the quota.
    static let commands: Set<String> = [
        "request_location_update", "request_location_updates", "update_complications", "update_widgets",
        "clear_notification", "clear_badge", "delete_alert",
    ]

    /// The APNs headers `data.apns_headers` may set.
    static let settableHeaders: Set<String> = ["apns-priority", "apns-push-type", "apns-collapse-id", "apns-expiration"]

    static func draft(for request: HomeAssistantRequest, platform: Platform, now: Date) throws -> NotificationDraft {
        if platform == .fcm { return try HomeAssistantAndroidPayload.draft(for: request) }
        let data = FieldReader(request.data, path: "data")
        var draft = commands.contains(request.message)
            ? try command(request, data)
            : try alert(request, data)
        if let webhookID = request.webhookID { draft.payload["webhook_id"] = .string(webhookID) }
        try applyHeaders(from: data, to: &draft, now: now)
        return draft
    }

    // MARK: Alerts

    private static func alert(_ request: HomeAssistantRequest, _ data: FieldReader) throws -> NotificationDraft {
        var alert: JSONObject = ["body": .string(request.message)]
        if let title = request.title { alert["title"] = .string(title) }
        if let subtitle = try data.optionalString("subtitle") { alert["subtitle"] = .string(subtitle) }
        var aps: JSONObject = ["alert": .object(alert), "sound": "default"]
        var payload: JSONObject = [:]

        if let push = try data.optionalObject("push") {
            for (key, value) in push.object { aps[key] = value }
            if let category = aps["category"]?.stringValue { aps["category"] = .string(category.uppercased()) }
            if let badge = aps["badge"] { aps["badge"] = try number(badge, path: "data.push.badge") }
        }
        if let sound = data.value("sound") ?? aps["sound"] {
            aps["sound"] = try normalisedSound(sound, path: data.value("sound") != nil ? "data.sound" : "data.push.sound")
        }
        if let group = try data.optionalString("group") { aps["thread-id"] = .string(group) }

        var extended = false
        if let actions = data.value("actions") {
            guard case .array = actions else { throw invalid("data.actions", "data.actions must be a list of actions.") }
            payload["actions"] = actions
            aps["category"] = "DYNAMIC"
        }
        if let entityID = data.value("entity_id") {
            payload["entity_id"] = entityID
            extended = true
        }
        if let attachment = try data.optionalObject("attachment") {
            payload["attachment"] = .object(attachment.object)
            extended = true
        } else {
            for (key, contentType) in [("image", "jpeg"), ("video", "mpeg4"), ("audio", "waveformaudio")] {
                guard let url = try data.optionalString(key) else { continue }
                payload["attachment"] = ["url": .string(url), "content-type": .string(contentType)]
                extended = true
                break
            }
        }
        if extended {
            aps["category"] = "DYNAMIC"
            aps["mutable-content"] = 1
        }
        for key in ["url", "shortcut", "presentation_options"] {
            if let value = data.value(key) { payload[key] = value }
        }
        if let actionData = data.value("action_data") { payload["homeassistant"] = actionData }
        payload["aps"] = .object(aps)

        let isCritical: Bool = {
            guard case .object(let sound)? = aps["sound"] else { return false }
            return (sound["critical"]?.doubleValue ?? 0) != 0 && (sound["volume"]?.doubleValue ?? 0) > 0
        }()
        let tag = try data.optionalString("tag").map { try CollapseIDRule.validated($0, field: "data.tag") }
        return NotificationDraft(
            pushType: .alert, priority: 10, collapseID: tag, payload: payload,
            isExemptFromQuota: isCritical)
    }

    /// `"none"` removes the sound; a dictionary becomes `{name, critical: Int, volume: Double}` (a critical alert).
    private static func normalisedSound(_ sound: JSONValue, path: String) throws -> JSONValue? {
        switch sound {
        case .string("none"): return nil
        case .string: return sound
        case .object(let object):
            var normalised: JSONObject = ["name": object["name"] ?? "default"]
            if let critical = object["critical"] { normalised["critical"] = .int(Int(try number(critical, path: "\(path).critical").doubleValue ?? 0)) }
            if let volume = object["volume"] { normalised["volume"] = .double(try number(volume, path: "\(path).volume").doubleValue ?? 0) }
            return .object(normalised)
        default:
            throw invalid(path, "\(path) must be a sound name or a {name, critical, volume} object.")
        }
    }

    // MARK: Commands

    private static func command(_ request: HomeAssistantRequest, _ data: FieldReader) throws -> NotificationDraft {
        var aps: JSONObject = ["content-available": 1]
        var homeassistant: JSONObject = ["command": .string(request.message)]
        if let badge = try data.optionalObject("push")?.value("badge") {
            aps["badge"] = try number(badge, path: "data.push.badge")
        }
        switch request.message {
        case "clear_badge":
            aps["badge"] = 0
        case "clear_notification":
            if let tag = try data.optionalString("tag") {
                homeassistant["tag"] = .string(tag)
                homeassistant["collapseId"] = .string(tag)
            }
        default:
            break
        }
        // A command never replaces a notification on screen: no collapse id.
        return NotificationDraft(
            pushType: .background, priority: 5, collapseID: nil,
            payload: ["aps": .object(aps), "homeassistant": .object(homeassistant)], isExemptFromQuota: true)
    }

    // MARK: Headers

    private static func applyHeaders(from data: FieldReader, to draft: inout NotificationDraft, now: Date) throws {
        guard let headers = try data.optionalObject("apns_headers") else { return }
        for (name, value) in headers.object {
            let key = name.lowercased()
            let path = "data.apns_headers.\(name)"
            guard settableHeaders.contains(key) else {
                throw invalid(path, "\(name) cannot be set; data.apns_headers may set \(settableHeaders.sorted().joined(separator: ", ")).")
            }
            let text: String
            switch value {
            case .string(let string): text = string
            case .int(let int): text = String(int)
            default: throw invalid(path, "\(path) must be a string or a whole number.")
            }
            switch key {
            case "apns-priority":
                guard let priority = Int(text), [1, 5, 10].contains(priority) else { throw invalid(path, "\(path) must be 1, 5 or 10.") }
                draft.priority = priority
            case "apns-push-type":
                guard let type = PushType(rawValue: text) else { throw invalid(path, "\(path) must be alert or background.") }
                draft.pushType = type
            case "apns-collapse-id":
                let collapseID = try CollapseIDRule.validated(text, field: path)
                draft.collapseID = collapseID.isEmpty ? nil : collapseID
            default:  // apns-expiration
                guard let seconds = Int(text), seconds >= 0 else { throw invalid(path, "\(path) must be UNIX seconds (0 = one minute from now).") }
                draft.expiresAt = seconds == 0 ? now.addingTimeInterval(60) : Date(timeIntervalSince1970: TimeInterval(seconds))
            }
        }
        if draft.pushType == .background, draft.priority == 10 {
            throw invalid("data.apns_headers.apns-priority", "A background push must have apns-priority 5 or 1.")
        }
    }

    // MARK: Helpers

    private static func number(_ value: JSONValue, path: String) throws -> JSONValue {
        switch value {
        case .int, .double: return value
        case .string(let text):
            if let int = Int(text) { return .int(int) }
            if let double = Double(text) { return .double(double) }
            fallthrough
        default:
            throw invalid(path, "\(path) must be a number.")
        }
    }

    private static func invalid(_ field: String, _ message: String) -> APIError {
        APIError.invalidField(field, message)
    }
}
