import Foundation
import HeraldCore
import Synchronization

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

    static func draft(for request: HomeAssistantRequest, token: String, clock: LiveActivityClock, now: Date) throws -> NotificationDraft {
        let data = FieldReader(request.data, path: "data")
        let event = try data.optionalChoice("event", from: events) ?? "update"
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        var aps: JSONObject = [
            "timestamp": .int(clock.timestamp(for: token, now: seconds)), "event": .string(event),
            "content-state": .object(try contentState(request, data, now: seconds)),
        ]
        if event == "start" {
            aps["attributes-type"] = .string(attributesType)
            var attributes: JSONObject = [
                "tag": request.data["tag"] ?? "", "title": .string(request.title ?? ""), "started_at": .int(seconds),
            ]
            if let webhookID = request.webhookID { attributes["webhook_id"] = .string(webhookID) }
            aps["attributes"] = .object(attributes)
        }
        if event == "end" { aps["dismissal-date"] = request.data["dismissal_date"] ?? .int(seconds) }
        if let staleDate = request.data["stale_date"] { aps["stale-date"] = staleDate }
        if let relevance = request.data["relevance_score"] { aps["relevance-score"] = relevance }

        let isSilentUpdate = event == "update" && request.data["silent"] == .bool(true)
        if let alert = data.value("alert"), RelayRules.isTruthy(alert) {
            aps["alert"] = alert
            if let sound = data.value("alert_sound"), RelayRules.isTruthy(sound) { aps["sound"] = sound }
        } else if isSilentUpdate {
            // A title-only alert keeps the push fast without a chime.
            aps["alert"] = ["title": ""]
        } else {
            let body = request.message == "clear_notification" ? "" : request.message
            aps["alert"] = ["title": .string(request.title ?? ""), "body": .string(body)]
        }

        // Several queued starts of one activity collapse into the newest; updates and ends must each arrive.
        var collapseID: String?
        if event == "start", let tag = data.value("tag"), RelayRules.isTruthy(tag) {
            guard case .string(let text) = tag else { throw APIError.invalidField("data.tag", "data.tag must be a string.") }
            collapseID = try CollapseIDRule.validated(text, field: "data.tag")
        }
        return NotificationDraft(
            pushType: .liveactivity, priority: isSilentUpdate ? 5 : 10, collapseID: collapseID,
            content: HomeAssistantPayload.apnsContent(["aps": .object(try RelayRules.apsOnTheWire(aps, path: "data"))]),
            liveActivityToken: token)
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

/// Each Live Activity push's `aps.timestamp`: Unix seconds, strictly increasing per token, because the device drops
/// an update that is not newer than the last one it showed, and two updates can share a second. Kept in this
/// process: with several instances, two pushes to one token in one second from two instances can share a timestamp.
final class LiveActivityClock: Sendable {
    private let last = Mutex<[String: Int]>([:])
    /// Above this many tokens, those whose last timestamp is in the past are forgotten (they can't clash any more).
    private let pruneAbove: Int

    init(pruneAbove: Int = 10_000) {
        self.pruneAbove = pruneAbove
    }

    func timestamp(for token: String, now: Int) -> Int {
        last.withLock { last in
            let timestamp = max(now, (last[token] ?? .min) + 1)
            last[token] = timestamp
            if last.count > pruneAbove { last = last.filter { $0.value >= now } }
            return timestamp
        }
    }
}
