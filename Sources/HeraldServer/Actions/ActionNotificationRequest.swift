import Foundation
import HTTPTypes
import HeraldCore

/// `POST /notifications`: an alert with a level, an optional image, a tap URL, grouping by source and up to ten
/// action buttons. Decodes, validates and turns into the one ``NotificationDraft`` (payload in docs/payloads.md).
struct ActionNotificationRequest {
    /// `interruption-level` values, as APNs spells them.
    enum Level: String, CaseIterable {
        case passive
        case active
        case timeSensitive = "time-sensitive"
        case critical
    }

    /// The one notification category the app registers for notifications with buttons; the buttons themselves
    /// travel in the payload's `actions` and the app's Notification Service Extension installs them.
    static let actionsCategory = "HERALD_ACTIONS"
    static let maximumSourceLength = 64
    static let maximumSourceDisplayNameLength = 64
    /// `aps.sound` of a critical alert: full volume, the default sound.
    static let criticalSound: JSONValue = ["critical": 1, "name": "default", "volume": 1.0]

    var title: String
    var body: String
    var source: String?
    var sourceDisplayName: String?
    var level: Level
    var imageURL: String?
    var url: String?
    var notificationID: String?
    var actions: [NotificationAction]

    /// Decodes and validates the body. `null` and `""` count as absent for optional fields; unknown fields are ignored.
    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        title = try fields.requiredNonEmptyString("title")
        body = try fields.requiredNonEmptyString("body")

        source = try fields.optionalString("source")
        if let source, source.count > Self.maximumSourceLength {
            throw APIError.invalidField("source", "source must be at most \(Self.maximumSourceLength) characters; got \(source.count).")
        }
        sourceDisplayName = try fields.optionalString("source_display_name")
        if let sourceDisplayName, sourceDisplayName.count > Self.maximumSourceDisplayNameLength {
            throw APIError.invalidField(
                "source_display_name",
                "source_display_name must be at most \(Self.maximumSourceDisplayNameLength) characters; got \(sourceDisplayName.count).")
        }
        level = try fields.optionalChoice("level", from: Level.allCases.map(\.rawValue)).flatMap(Level.init(rawValue:)) ?? .active

        imageURL = try fields.optionalString("image_url").map(Self.validImageURL)
        url = try fields.optionalString("url").map { try NotificationAction.validURL($0, field: "url") }

        notificationID = try fields.optionalString("notification_id").map {
            try CollapseIDRule.validated($0, field: "notification_id")
        }
        actions = try Self.validActions(fields)
    }

    private static func validImageURL(_ raw: String) throws -> String {
        let url = try NotificationAction.validURL(raw, field: "image_url")
        guard ["http", "https"].contains(NotificationAction.scheme(of: url)) else {
            throw APIError.invalidField("image_url", "image_url must be an http:// or https:// URL of an image.")
        }
        return url
    }

    private static func validActions(_ fields: FieldReader) throws -> [NotificationAction] {
        guard let value = fields.value("actions") else { return [] }
        guard case .array(let elements) = value else {
            throw APIError.invalidField("actions", "actions must be an array of objects.")
        }
        guard elements.count <= NotificationAction.maximumCount else {
            throw APIError.invalidField(
                "actions", "actions must hold at most \(NotificationAction.maximumCount) buttons; got \(elements.count).")
        }
        var actions: [NotificationAction] = []
        for (index, element) in elements.enumerated() {
            let path = "actions[\(index)]"
            guard case .object(let object) = element else { throw APIError.invalidField(path, "\(path) must be an object.") }
            let action = try NotificationAction(FieldReader(object, path: path))
            if let first = actions.firstIndex(where: { $0.id == action.id }) {
                throw APIError.invalidField("\(path).id", "\(path).id repeats actions[\(first)].id \"\(action.id)\"; ids must be unique.")
            }
            actions.append(action)
        }
        return actions
    }

    /// The notification the app receives on a device of `platform` (documented in docs/payloads.md). Critical alerts
    /// don't count against the daily quota.
    func draft(for platform: Platform) -> NotificationDraft { draft(for: platform, body: body) }

    private func draft(for platform: Platform, body: String, includingActions: Bool = true) -> NotificationDraft {
        platform == .fcm
            ? fcmDraft(body: body, includingActions: includingActions)
            : apnsDraft(body: body, includingActions: includingActions)
    }

    private func apnsDraft(body: String, includingActions: Bool) -> NotificationDraft {
        var aps: JSONObject = [
            "alert": ["title": .string(title), "body": .string(body)],
            "interruption-level": .string(level.rawValue),
            "sound": level == .critical ? Self.criticalSound : "default",
        ]
        if let source { aps["thread-id"] = .string(source) }
        let hasActions = includingActions && !actions.isEmpty
        if hasActions { aps["category"] = .string(Self.actionsCategory) }
        if hasActions || imageURL != nil { aps["mutable-content"] = 1 }

        var payload: JSONObject = ["aps": .object(aps)]
        if hasActions { payload["actions"] = .array(actions.map(\.json)) }
        if let source { payload["source"] = .string(source) }
        if let sourceDisplayName { payload["source_display_name"] = .string(sourceDisplayName) }
        if let imageURL { payload["image_url"] = .string(imageURL) }
        if let url { payload["url"] = .string(url) }
        if let notificationID { payload["notification_id"] = .string(notificationID) }
        return NotificationDraft(
            pushType: .alert, priority: 10, collapseID: notificationID, payload: payload, isExemptFromQuota: level == .critical)
    }

    /// FCM: without buttons a notification message that Android shows by itself (`source` as its channel, the image,
    /// the level as the notification's priority); with buttons a data-only message, because only the app can draw
    /// buttons: `title`, `body` and the `actions` (JSON text) travel in `data`. `level` decides the delivery
    /// priority: `passive` is `NORMAL`, every other level `HIGH`.
    private func fcmDraft(body: String, includingActions: Bool) -> NotificationDraft {
        let hasActions = includingActions && !actions.isEmpty
        var data = FCMMessage.data([
            "level": .string(level.rawValue), "source": source.map(JSONValue.string),
            "source_display_name": sourceDisplayName.map(JSONValue.string), "image_url": imageURL.map(JSONValue.string),
            "url": url.map(JSONValue.string), "notification_id": notificationID.map(JSONValue.string),
        ])
        var android: JSONObject = ["priority": level == .passive ? "NORMAL" : "HIGH"]
        if let notificationID { android["collapse_key"] = .string(notificationID) }
        var message: JSONObject = [:]
        let bodyPath: [String]
        if hasActions {
            data["title"] = .string(title)
            data["body"] = .string(body)
            data["actions"] = .string(FCMMessage.dataString(.array(actions.map(\.json))))
            bodyPath = ["data", "body"]
        } else {
            var notification: JSONObject = ["title": .string(title), "body": .string(body)]
            if let imageURL { notification["image"] = .string(imageURL) }
            message["notification"] = .object(notification)
            var androidNotification: JSONObject = [
                "notification_priority": .string(Self.androidNotificationPriority[level] ?? "PRIORITY_DEFAULT"),
                "sound": "default",
            ]
            if let source { androidNotification["channel_id"] = .string(source) }
            if let notificationID { androidNotification["tag"] = .string(notificationID) }
            android["notification"] = .object(androidNotification)
            bodyPath = FCMMessage.notificationBodyPath
        }
        message["data"] = .object(data)
        message["android"] = .object(android)
        return NotificationDraft(
            pushType: .alert, priority: level == .passive ? 5 : 10, collapseID: notificationID, payload: message,
            bodyPath: bodyPath, isExemptFromQuota: level == .critical)
    }

    /// `android.notification.notification_priority` for each level.
    static let androidNotificationPriority: [Level: String] = [
        .passive: "PRIORITY_LOW", .active: "PRIORITY_DEFAULT", .timeSensitive: "PRIORITY_HIGH", .critical: "PRIORITY_MAX",
    ]

    /// Refuses (400 `payload_too_large`, field `actions`) a notification that cannot fit its provider's limit even with its
    /// body shortened away *because of its actions*: without them it would fit. Other oversized notifications are
    /// refused by the pipeline with the general message.
    func checkActionsFit(for platform: Platform) throws {
        let limit = PayloadFitter.limit(for: platform)
        let shortest = try JSONValue.object(draft(for: platform, body: "").payload).encoded().count
        guard shortest > limit else { return }
        let withoutActions = try JSONValue.object(draft(for: platform, body: "", includingActions: false).payload).encoded().count
        guard withoutActions <= limit else { return }
        let actionBytes = try JSONValue.array(actions.map(\.json)).encoded().count
        throw APIError(
            .payloadTooLarge,
            message: "The actions take \(actionBytes) bytes and the notification cannot fit \(platform == .fcm ? "FCM's" : "APNs'") \(limit)-byte limit "
                + "even with the body shortened away (\(shortest) bytes); send fewer actions or shorter urls, headers and bodies.",
            field: "actions")
    }
}
