import Foundation
import HeraldCore

/// A Home Assistant call with a `live_activity_token`: the APNs Live Activity push the relay's `live-activity.js`
/// builds, sent straight to that token (`apns-push-type: liveactivity`, topic `<topic>.push-type.liveactivity`), never
/// to the device's own token. It counts against the daily limit, as the relay counts it.
enum HomeAssistantLiveActivity {
    /// The Swift type the Home Assistant app registers with ActivityKit (case-sensitive; fixed once shipped).
    static let attributesType = "HALiveActivityAttributes"
    static let events = ["start", "update", "end"]

    /// `data` keys copied into `content-state`, and the name each gets there.
    static let contentStateKeys: [(data: String, state: String)] = [
        ("critical_text", "critical_text"), ("progress", "progress"), ("progress_max", "progress_max"),
        ("chronometer", "chronometer"), ("notification_icon", "icon"), ("notification_icon_color", "color"),
        ("background_color", "background_color"), ("text_color", "text_color"), ("progress_bar_color", "progress_bar_color"),
        ("progress_bar_direction", "progress_bar_direction"), ("url", "url"),
    ]
    /// `data.content_state` keys that override what the call's other fields gave.
    static let contentStateOverrides = [
        "title", "message", "critical_text", "progress", "progress_max", "chronometer", "countdown_end", "icon", "color",
        "background_color", "text_color", "progress_bar_color", "progress_bar_direction", "url",
    ]

    /// The draft of a call with a `live_activity_token`; `timestamp` is the token's next `aps.timestamp`
    /// (``ActivityStore/nextLiveActivityTimestamp(token:now:)``: strictly increasing across restarts and instances).
    static func draft(for request: HomeAssistantRequest, token: String, timestamp: Int, now: Date) throws -> NotificationDraft {
        let data = FieldReader(request.data, path: "data")
        let event = try data.optionalChoice("event", from: events).flatMap(LiveActivityMessage.Event.init(rawValue:)) ?? .update
        let seconds = LiveActivityTimestamp.seconds(now)
        var message = LiveActivityMessage(event: event, timestamp: timestamp, contentState: try contentState(request, data, now: seconds))
        if event == .start {
            message.attributesType = attributesType
            var attributes: JSONObject = [
                "tag": request.data["tag"] ?? "", "title": .string(request.title ?? ""), "started_at": .int(seconds),
            ]
            if let webhookID = request.webhookID { attributes["webhook_id"] = .string(webhookID) }
            message.attributes = attributes
        }
        if event == .end { message.dismissalDate = request.data["dismissal_date"] ?? .int(seconds) }
        message.staleDate = request.data["stale_date"]
        message.relevanceScore = request.data["relevance_score"]

        let isSilentUpdate = event == .update && request.data["silent"] == .bool(true)
        if let alert = data.value("alert"), RelayRules.isTruthy(alert) {
            message.alert = alert
            if let sound = data.value("alert_sound"), RelayRules.isTruthy(sound) { message.sound = sound }
        } else if isSilentUpdate {
            // A title-only alert keeps the push fast without a chime.
            message.alert = ["title": ""]
        } else {
            let body = request.message == "clear_notification" ? "" : request.message
            message.alert = ["title": .string(request.title ?? ""), "body": .string(body)]
        }

        // Several queued starts of one activity collapse into the newest; updates and ends must each arrive.
        var collapseID: String?
        if event == .start, let tag = data.value("tag"), RelayRules.isTruthy(tag) {
            guard case .string(let text) = tag else { throw APIError.invalidField("data.tag", "data.tag must be a string.") }
            collapseID = try CollapseIDRule.validated(text, field: "data.tag")
        }
        // The alert and the sound as firebase-admin spells them (the relay sends them through it).
        return NotificationDraft(
            pushType: .liveactivity, priority: isSilentUpdate ? .normal : .high, collapseID: collapseID,
            content: message.content(aps: try RelayRules.apsOnTheWire(message.aps, path: "data")), liveActivityToken: token)
    }

    /// The state the app's `HALiveActivityContentState` decodes: only the keys it knows (others would break decoding).
    private static func contentState(_ request: HomeAssistantRequest, _ data: FieldReader, now: Int) throws -> JSONObject {
        var state: JSONObject = ["message": .string(request.message == "clear_notification" ? "" : request.message)]
        if let title = request.title { state["title"] = .string(title) }
        for (key, name) in contentStateKeys where request.data[key] != nil { state[name] = request.data[key] }
        if let when = request.data["when"] {
            if RelayRules.isTruthy(request.data["when_relative"]) {
                guard let offset = when.doubleValue else { throw APIError.invalidField("data.when", "data.when must be a number of seconds.") }
                guard let end = NumberRule.unixSeconds(now, plus: offset) else {
                    throw APIError.invalidField(
                        "data.when", "data.when with when_relative must be a number of seconds that ends between 1970 and the year 9999.")
                }
                state["countdown_end"] = .int(end)
            } else {
                state["countdown_end"] = when
            }
        }
        if let overrides = try data.optionalObject("content_state") {
            for key in contentStateOverrides where overrides.object[key] != nil { state[key] = overrides.object[key] }
        }
        return state
    }
}
