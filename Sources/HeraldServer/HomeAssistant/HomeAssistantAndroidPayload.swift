import Foundation
import HeraldCore
import HeraldFCM
import HeraldProviderKit

/// Maps a Home Assistant notify call to the FCM message the Home Assistant Android app expects from its official
/// relay (`android.js`): a data-only message whose `data` holds `message`, `title`, the listed
/// notification options and the actions as strings, because the app draws every notification itself. The table in
/// docs/homeassistant.md lists every row.
enum HomeAssistantAndroidPayload {
    /// Messages that are commands to the app (not text to show): exempt from the daily quota, as the relay has it.
    static let commands: Set<String> = [
        "request_location_update", "clear_notification", "remove_channel", "command_dnd", "command_ringer_mode",
        "command_broadcast_intent", "command_volume_level", "command_screen_on", "command_bluetooth",
        "command_high_accuracy_mode", "command_activity", "command_app_lock", "command_webview", "command_media",
        "command_update_sensors", "command_ble_transmitter", "command_persistent_connection", "command_stop_tts",
        "command_auto_screen_brightness", "command_screen_brightness_level", "command_screen_off_timeout",
        "command_flashlight", "command_wake_word_detection",
    ]

    /// The `data` options copied to the message's `data` as strings (the relay's `androidNotificationKeys`).
    static let copiedKeys: [String] = [
        "icon", "color", "notification_icon_color", "sound", "tag", "clickAction", "bodyLocKey", "bodyLocArgs", "titleLocKey", "titleLocArgs", "channel",
        "ticker", "sticky", "eventTime", "localOnly", "notificationPriority", "defaultSound", "defaultVibrateTimings",
        "defaultLightSettings", "vibrateTimings", "visibility", "notificationCount", "lightSettings", "image", "timeout",
        "importance", "subject", "group", "icon_url", "ledColor", "vibrationPattern", "persistent", "chronometer", "when",
        "when_relative", "alert_once", "intent_class_name", "notification_icon", "ble_advertise", "ble_transmit", "video",
        "high_accuracy_update_interval", "package_name", "tts_text", "media_stream", "command", "intent_package_name",
        "intent_action", "intent_extras", "media_command", "media_package_name", "intent_uri", "intent_type", "ble_uuid",
        "ble_major", "ble_minor", "confirmation", "app_lock_enabled", "app_lock_timeout", "home_bypass_enabled", "car_ui",
        "ble_measured_power", "progress", "progress_max", "progress_indeterminate", "live_update", "critical_text",
    ]

    /// The FCM blocks `data` may replace wholesale, as the relay passes them through.
    static let passedThroughBlocks = ["android", "apns", "webpush"]

    static func draft(for request: HomeAssistantRequest) throws -> NotificationDraft {
        let options = FieldReader(request.data, path: "data")
        var data: JSONObject = [:]
        if let actions = options.value("actions") {
            guard case .array(let elements) = actions else { throw APIError.invalidField("data.actions", "data.actions must be a list of actions.") }
            for (index, element) in elements.enumerated() {
                guard case .object(let action) = element else {
                    throw APIError.invalidField("data.actions[\(index)]", "data.actions[\(index)] must be an object.")
                }
                for (field, key) in [
                    ("action", "key"), ("title", "title"), ("uri", "uri"), ("behavior", "behavior"),
                    ("authenticationRequired", "authenticationRequired"),
                ] where RelayRules.isTruthy(action[field]) {
                    data["action_\(index + 1)_\(key)"] = .string(FCMData.string(action[field] ?? .null))
                }
            }
        }
        for key in copiedKeys {
            if let value = request.data[key] { data[key] = .string(FCMData.string(value)) }
        }
        if !request.message.isEmpty { data["message"] = .string(request.message) }
        if let title = request.title { data["title"] = .string(title) }
        if let webhookID = request.webhookID { data["webhook_id"] = .string(webhookID) }
        if let extra = try options.optionalObject("data", emptyStringIsAbsent: false) {
            for (key, value) in extra.object where value != .null { data[key] = .string(FCMData.string(value)) }
        }

        // As the relay: FCM's own priority (normal for a data message) unless `data.priority` asks for another.
        var android: JSONObject = [:]
        if let priority = try priority(options) { android["priority"] = .string(priority) }
        if let ttl = try ttl(options) { android["ttl"] = .string(ttl) }
        var message: JSONObject = ["data": .object(data), "android": .object(android)]
        for block in passedThroughBlocks {
            if let object = try options.optionalObject(block, emptyStringIsAbsent: false) { message[block] = .object(object.object) }
        }
        let isCommand = commands.contains(request.message)
        return NotificationDraft(
            pushType: isCommand ? .background : .alert, priority: .high,
            // The app replaces notifications by `data.tag` itself, so any length is fine; the collapse id (shown by the
            // dashboard, unused by FCM) is kept when it fits APNs' rule.
            collapseID: (try? options.optionalString("tag")).flatMap { try? CollapseIDRule.validated($0, field: "data.tag") },
            content: HomeAssistantPayload.content(
                raw: message, for: .fcm, bodyPath: ["data", "message"], title: data["title"]?.stringValue,
                body: data["message"]?.stringValue),
            isExemptFromQuota: isCommand)
    }

    /// `data.priority` (`high` or `normal`, any case) as FCM spells it; `nil` when absent.
    private static func priority(_ options: FieldReader) throws -> String? {
        guard let text = try options.optionalString("priority") else { return nil }
        guard ["high", "normal"].contains(text.lowercased()) else {
            throw APIError.invalidField("data.priority", "data.priority must be high or normal; got \"\(text)\".")
        }
        return text.uppercased()
    }

    /// `data.ttl`: a number of milliseconds, as the Firebase Admin SDK takes it (Home Assistant's docs use `ttl: 0`
    /// for urgent notifications), as FCM's duration text (`"0s"`, `"3.5s"`).
    private static func ttl(_ options: FieldReader) throws -> String? {
        guard let value = options.value("ttl") else { return nil }
        let milliseconds: Double
        switch value {
        case .int(let int): milliseconds = Double(int)
        case .double(let double): milliseconds = double
        case .string(let text) where Double(text) != nil: milliseconds = Double(text) ?? 0
        default: throw APIError.invalidField("data.ttl", "data.ttl must be a number of milliseconds.")
        }
        let seconds = milliseconds / 1_000
        let maximumTTL = FCMModule.description.limits.maximumTimeToLive ?? 0  // FCM publishes four weeks
        guard seconds >= 0, seconds <= Double(maximumTTL) else {
            throw APIError.invalidField("data.ttl", "data.ttl must be from 0 to \(maximumTTL * 1_000) milliseconds (four weeks).")
        }
        let whole = seconds.rounded(.down)
        return whole == seconds ? "\(Int(whole))s" : String(format: "%.3fs", seconds)
    }
}
