import Foundation
import HeraldCore

/// Renders a notification's content as the JSON document a browser's service worker receives (docs/payloads.md):
///
/// ```json
/// {"title": "…", "body": "…", "image": "https://…", "url": "https://…", "tag": "<collapse id>", "level": "active",
///  "silent": false, "actions": [{"id": "…", "title": "…", "url": "…"}], "data": {…the dialect's own keys…}}
/// ```
///
/// The service worker shows it with `showNotification(title, {body, image, tag, actions, data})`; a later notification
/// with the same `tag` replaces the earlier one, a tap opens `url`, and the worker decides how many actions the
/// platform shows. Every member but `title` and `body` is left out when the content does not say it. The provider adds
/// the notification's `id` at send time. A `pw1` end-to-end envelope travels as `encrypted` (inside RFC 8291's
/// encryption); Herald's service worker opens it with the key the browser keeps and shows what it holds instead of the
/// placeholder `title` and `body` (docs/e2e.md).
public struct WebPushRenderer: PayloadRenderer {
    /// One encrypted record holds 3,993 bytes of plaintext (``WebPushEncryption/maximumPlaintextSize``); 64 of them
    /// are kept for the `"id"` the provider adds.
    public static let limit = WebPushEncryption.maximumPlaintextSize - 64

    public let name = "webpush"
    public let sizeLimit = Self.limit

    public init() {}

    /// The priority passes through: the push service's `Urgency` follows the content's level, which says more
    /// (``WebPushRequestHeaders/urgency(_:)``).
    public func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        var payload: JSONObject = ["title": .string(content.title ?? ""), "body": .string(content.body ?? "")]
        payload["image"] = content.imageURL.map(JSONValue.string)
        payload["url"] = content.tapURL.map(JSONValue.string)
        payload["tag"] = collapseID.map(JSONValue.string)
        payload["level"] = content.level.map { .string($0.rawValue) }
        if content.sound == nil { payload["silent"] = true }
        if !content.actions.isEmpty { payload["actions"] = .array(content.actions.map { .object($0.json) }) }
        if !content.data.isEmpty { payload["data"] = .object(content.data) }
        payload["encrypted"] = content.encrypted.map { .string($0.text) }
        return RenderedPayload(payload: payload, bodyPath: ["body"], priority: priority)
    }
}
