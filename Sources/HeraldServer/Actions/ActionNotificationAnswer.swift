import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// The 201 of `POST /notifications`: PushWard's `Notification` (the stored fields, `pushed`, `delivery`, `reason`,
/// `created_at`, `answerable`) with Herald's send answer (`status`, `truncated`, `rateLimits`, `warning`) and its
/// `RateLimit-*` headers (docs/api.md).
enum ActionNotificationAnswer {
    static func created(_ receipt: SendReceipt, of request: ActionNotificationRequest, now: Date, receipt ack: Receipt? = nil) -> Response {
        let notification = receipt.notification
        let delivered = notification.status == .delivered
        var body: JSONObject = [
            "id": .string(notification.id.lowercasedText), "status": .string(receipt.statusWord), "truncated": .bool(receipt.truncated),
            "rateLimits": SendAnswers.rateLimits(receipt.quota), "pushed": .bool(delivered), "delivery": .string(delivered ? "all" : "none"),
            "created_at": .string(notification.createdAt.iso8601WithMilliseconds), "answerable": .bool(request.isAnswerable),
            "title": .string(request.title), "body": .string(request.body), "level": .string(request.level.rawValue),
            "push": .bool(request.pushWard.push),
        ]
        body["warning"] = receipt.warning.map(JSONValue.string)
        if notification.status == .stored { body["reason"] = "push_disabled" }
        let members = request.pushWard
        body["subtitle"] = members.subtitle.map(JSONValue.string)
        body["source"] = request.source.map(JSONValue.string)
        body["source_display_name"] = request.sourceDisplayName.map(JSONValue.string)
        body["thread_id"] = members.threadID.map(JSONValue.string)
        body["collapse_id"] = (members.collapseID ?? request.notificationID).map(JSONValue.string)
        body["notification_id"] = request.notificationID.map(JSONValue.string)
        body["url"] = request.url.map(JSONValue.string)
        body["image_url"] = request.imageURL.map(JSONValue.string)
        body["icon_url"] = members.iconURL.map(JSONValue.string)
        body["media_url"] = members.media.map { .string($0.url) }
        body["media_type"] = members.media.map { .string($0.type) }
        body["metadata"] = members.metadata.map { .object($0.mapValues(JSONValue.string)) }
        body["activity_slug"] = members.activitySlug.map(JSONValue.string)
        if !members.tags.isEmpty { body["tags"] = .array(members.tags.map(JSONValue.string)) }
        if !request.actions.isEmpty { body["actions"] = .array(request.actions.map { .object($0.action.json) }) }
        if request.level == .critical, let volume = members.volume { body["volume"] = .double(volume) }
        if let ack {  // repeats until acknowledged (Receipts/): the receipt's id and the collapse id of every push
            body["receipt"] = .string(ack.id.lowercasedText)
            body["collapse_id"] = .string(ack.collapseID)
        }
        return JSONResponse.make(status: .created, body: body, headers: SendAnswers.headers(receipt.quota, now: now))
    }
}
