import Foundation
import HTTPTypes
import HeraldCore

/// `POST /notifications`: PushWard's `CreateNotificationRequest` (every member, `additionalProperties: false`) plus
/// Herald's `image_url`, `notification_id` and `encrypted`: an alert with a level, media, a tap URL, grouping and up to
/// ten action buttons. Decodes, validates and turns into the one ``NotificationDraft`` (payload in docs/payloads.md).
/// The PushWard members added for issue 39 are read in ActionNotificationRequest+PushWard.swift.
struct ActionNotificationRequest {
    /// `interruption-level` values, as APNs spells them.
    typealias Level = NotificationContent.Level

    static let maximumSourceLength = 128
    static let maximumSourceDisplayNameLength = 256
    static let maximumTitleLength = 256
    static let maximumBodyLength = 4096

    var title: String
    var body: String
    var source: String?
    var sourceDisplayName: String?
    var level: Level
    var imageURL: String?
    var url: String?
    var notificationID: String?
    var actions: [ActionButton]
    /// A `pw1` end-to-end envelope (docs/e2e.md); `title` and `body` are then the placeholder.
    var encrypted: E2EEnvelope?
    /// PushWard's members (ActionNotificationRequest+PushWard.swift).
    var pushWard: PushWardMembers
    /// Repeat until acknowledged (Receipts/AcknowledgeRequest.swift).
    var acknowledge: AcknowledgeRequest?
    /// Where the end of the notification's receipt is POSTed, signed (docs/api.md, "Callbacks"); its addresses are
    /// checked against the server's egress rules by the controller.
    var callbackURL: String?

    /// Decodes and validates the body. `null` and `""` count as absent for optional fields; an unknown member is a 400
    /// `unknown_field` naming it.
    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        try fields.refuseUnknownMembers(allowed: Self.members)
        title = try fields.requiredNonEmptyString("title")
        try Self.checkLength(title, of: "title", maximum: Self.maximumTitleLength)
        body = try fields.requiredNonEmptyString("body")
        try Self.checkLength(body, of: "body", maximum: Self.maximumBodyLength)

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
        url = try fields.optionalString("url").map { try ActionButton.validURL($0, field: "url") }

        notificationID = try fields.optionalString("notification_id").map {
            try CollapseIDRule.validated($0, field: "notification_id")
        }
        actions = try Self.validActions(fields)
        encrypted = try EncryptedRule.envelope(fields)
        if encrypted != nil, url != nil {
            throw APIError.invalidField("url", "url travels inside encrypted when encrypted is given; leave it out of the clear request.")
        }
        pushWard = try PushWardMembers(fields, level: level)
        callbackURL = try fields.optionalString("callback_url").map {
            try CallbackURLRule.validated($0, field: "callback_url", policy: nil)
        }
        if pushWard.media != nil, imageURL != nil {
            throw APIError.invalidField("media", "media and image_url both attach media; give one of them.")
        }
        if let collapseID = pushWard.collapseID, let notificationID, collapseID != notificationID {
            throw APIError.invalidField(
                "collapse_id", "collapse_id and notification_id are both the collapse id; give one, or the same value in both.")
        }
        acknowledge = try AcknowledgeRequest(fields)
        try AcknowledgeRequest.check(&self)
    }

    static func checkLength(_ value: String, of field: String, maximum: Int) throws {
        guard value.count <= maximum else {
            throw APIError.invalidField(field, "\(field) must be at most \(maximum) characters; got \(value.count).")
        }
    }

    /// Whether the person's tap can be answered back (docs/api.md, "Answers"): an action without a `url` that does not
    /// bring the app to the foreground.
    var isAnswerable: Bool { actions.contains(where: \.isAnswer) }

    private static func validImageURL(_ raw: String) throws -> String {
        let url = try ActionButton.validURL(raw, field: "image_url")
        guard ["http", "https"].contains(ActionButton.scheme(of: url)) else {
            throw APIError.invalidField("image_url", "image_url must be an http:// or https:// URL of an image.")
        }
        return url
    }

    private static func validActions(_ fields: FieldReader) throws -> [ActionButton] {
        guard let value = fields.value("actions") else { return [] }
        guard case .array(let elements) = value else {
            throw APIError.invalidField("actions", "actions must be an array of objects.")
        }
        guard elements.count <= ActionButton.maximumCount else {
            throw APIError.invalidField(
                "actions", "actions must hold at most \(ActionButton.maximumCount) buttons; got \(elements.count).")
        }
        var actions: [ActionButton] = []
        for (index, element) in elements.enumerated() {
            let path = "actions[\(index)]"
            guard case .object(let object) = element else { throw APIError.invalidField(path, "\(path) must be an object.") }
            let action = try ActionButton(FieldReader(object, path: path))
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
        pushWard.addPayloadMembers(to: &data)
        let mediaImage = pushWard.media.flatMap { $0.type == "image" ? $0.url : nil }
        let content = NotificationContent(
            title: title, subtitle: pushWard.subtitle, body: body, sound: level == .critical ? .critical : .default, level: level,
            thread: pushWard.threadID ?? source, imageURL: imageURL ?? mediaImage, hasMedia: imageURL != nil || pushWard.media != nil,
            actions: includingActions ? actions.map(\.action) : [], tapURL: url, data: data, encrypted: encrypted,
            criticalVolume: pushWard.volume, meta: pushWard.meta)
        return NotificationDraft(
            pushType: .alert, priority: .high, collapseID: pushWard.collapseID ?? notificationID, content: content,
            isExemptFromQuota: level == .critical)
    }

    /// Refuses (400 `payload_too_large`, field `actions`) a notification that cannot fit its provider's limit even with its
    /// body shortened away *because of its actions*: without them it would fit. Other oversized notifications are
    /// refused by the pipeline with the general message.
    /// `provider` names whose limit it is in the message (`APNs'`, `FCM's`, `Web Push's`).
    func checkActionsFit(_ renderer: any PayloadRenderer, provider: String) throws {
        func shortestBytes(includingActions: Bool) throws -> Int {
            let draft = draft(body: "", includingActions: includingActions)
            let rendered = renderer.render(draft.content, priority: draft.priority, collapseID: draft.collapseID)
            return try JSONValue.object(rendered.payload).encoded().count
        }
        let limit = renderer.sizeLimit
        let shortest = try shortestBytes(includingActions: true)
        guard shortest > limit else { return }
        guard try shortestBytes(includingActions: false) <= limit else { return }
        let actionBytes = try JSONValue.array(actions.map { .object($0.action.json) }).encoded().count
        throw APIError(
            .payloadTooLarge,
            message: "The actions take \(actionBytes) bytes and the notification cannot fit \(provider) \(limit)-byte limit "
                + "even with the body shortened away (\(shortest) bytes); send fewer actions or shorter urls, headers and bodies.",
            field: "actions")
    }
}
