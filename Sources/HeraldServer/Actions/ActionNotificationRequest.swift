import Foundation
import HTTPTypes
import HeraldCore

/// `POST /notifications`: an alert with a level, an optional image, a tap URL, grouping by source and up to ten
/// action buttons. Decodes, validates and turns into the one ``NotificationDraft`` (payload in docs/payloads.md).
struct ActionNotificationRequest {
    /// `interruption-level` values, as APNs spells them.
    typealias Level = NotificationContent.Level

    static let maximumSourceLength = 64
    static let maximumSourceDisplayNameLength = 64

    var title: String
    var body: String
    var source: String?
    var sourceDisplayName: String?
    var level: Level
    var imageURL: String?
    var url: String?
    var notificationID: String?
    var actions: [NotificationAction]
    /// A `pw1` end-to-end envelope (docs/e2e.md); `title` and `body` are then the placeholder.
    var encrypted: E2EEnvelope?

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
        encrypted = try EncryptedRule.envelope(fields)
        if encrypted != nil, url != nil {
            throw APIError.invalidField("url", "url travels inside encrypted when encrypted is given; leave it out of the clear request.")
        }
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

    /// The notification (docs/payloads.md): `source` as its thread, the level as its interruption level (critical
    /// alerts sound at full volume and don't count against the daily quota), the image for the app's extension and
    /// for platforms that show one by themselves, the buttons, and the request's fields as the app's own keys.
    var draft: NotificationDraft { draft(body: body) }

    private func draft(body: String, includingActions: Bool = true) -> NotificationDraft {
        var data: JSONObject = [:]
        data["source"] = source.map(JSONValue.string)
        data["source_display_name"] = sourceDisplayName.map(JSONValue.string)
        data["image_url"] = imageURL.map(JSONValue.string)
        data["url"] = url.map(JSONValue.string)
        data["notification_id"] = notificationID.map(JSONValue.string)
        let content = NotificationContent(
            title: title, body: body, sound: level == .critical ? .critical : .default, level: level, thread: source,
            imageURL: imageURL, hasMedia: imageURL != nil, actions: includingActions ? actions.compactMap(\.json.objectValue) : [], tapURL: url,
            data: data, encrypted: encrypted)
        return NotificationDraft(
            pushType: .alert, priority: 10, collapseID: notificationID, content: content, isExemptFromQuota: level == .critical)
    }

    /// Refuses (400 `payload_too_large`, field `actions`) a notification that cannot fit its provider's limit even with its
    /// body shortened away *because of its actions*: without them it would fit. Other oversized notifications are
    /// refused by the pipeline with the general message.
    func checkActionsFit(_ renderer: any PayloadRenderer) throws {
        func shortestBytes(includingActions: Bool) throws -> Int {
            let draft = draft(body: "", includingActions: includingActions)
            let rendered = renderer.render(draft.content, priority: draft.priority, collapseID: draft.collapseID)
            return try JSONValue.object(rendered.payload).encoded().count
        }
        let limit = renderer.sizeLimit
        let shortest = try shortestBytes(includingActions: true)
        guard shortest > limit else { return }
        guard try shortestBytes(includingActions: false) <= limit else { return }
        let actionBytes = try JSONValue.array(actions.map(\.json)).encoded().count
        throw APIError(
            .payloadTooLarge,
            message: "The actions take \(actionBytes) bytes and the notification cannot fit \(renderer.name == "fcm" ? "FCM's" : "APNs'") \(limit)-byte limit "
                + "even with the body shortened away (\(shortest) bytes); send fewer actions or shorter urls, headers and bodies.",
            field: "actions")
    }
}
