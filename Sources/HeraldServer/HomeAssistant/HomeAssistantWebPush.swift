import Foundation
import HeraldCore

/// A Home Assistant notify call for a device of a provider the relay defines no payload for (Web Push's browsers, and
/// any provider added since): the call's title and message are the notification, with what a browser (or any other
/// surface) can show from `data`, as provider-neutral content:
///
/// | `data` | Web Push payload |
/// |---|---|
/// | `image` (an `http(s)` URL) | `image` |
/// | `url` (iOS), or `clickAction` (Android) when it is an `http(s)` URL | `url`, opened on a tap |
/// | `tag` | `tag` and `Topic`: a later notification with the same tag replaces this one |
/// | `actions` (`action`, `title`, `uri`) | `actions` (`id`, `title`, `url`) |
///
/// A command (`clear_badge`, `request_location_update`, …) has no meaning in a browser; it is shown as its message.
enum HomeAssistantWebPush {
    static func draft(for request: HomeAssistantRequest, base: NotificationDraft) -> NotificationDraft {
        var draft = base
        let data = request.data
        // A command (`clear_badge`, `request_location_update`, …) has no alert: a browser must show something.
        if draft.content.title == nil, draft.content.body == nil { draft.content.body = request.message }
        if let image = data["image"]?.stringValue, isWebURL(image) { draft.content.imageURL = image }
        if let url = data["url"]?.stringValue ?? data["clickAction"]?.stringValue, isWebURL(url) { draft.content.tapURL = url }
        if let tag = data["tag"]?.stringValue, !tag.isEmpty { draft.collapseID = tag }
        if case .array(let actions)? = data["actions"] {
            draft.content.actions = actions.compactMap(\.objectValue).compactMap { action in
                guard let id = action["action"]?.stringValue, let title = action["title"]?.stringValue else { return nil }
                // A browser's button: id, title and the URL it opens, nothing the app's buttons say.
                return NotificationAction(id: id, title: title, url: action["uri"]?.stringValue.flatMap { isWebURL($0) ? $0 : nil })
            }
        }
        return draft
    }

    private static func isWebURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("https://") || lowered.hasPrefix("http://")
    }
}
