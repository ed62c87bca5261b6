import Foundation
import HeraldCore

/// `POST /api/push/notify`, the camera app's send API: title, body, an optional collapse id, and the
/// `snapshot` (image to attach) and `open` (what a tap opens) objects, passed through to the app.
struct NotifyRequest {
    static let snapshotTypes = ["live", "frigate_event", "frigate_review", "url"]
    static let openTypes = ["live", "frigate_event", "frigate_review"]

    /// Whom the send is for: one device's USER_ID, or a topic (`tp_…`, issue 42): every member.
    enum Recipient: Equatable {
        case user(UserID)
        case topic(String)

        /// `text` read once: a topic id, or a USER_ID; 400 `invalid_field` for `user_id` otherwise.
        init(_ text: String) throws(APIError) {
            self = TopicID.accepts(text) ? .topic(text) : .user(try UserIDRule.userID(text))
        }
    }

    /// From the body's `user_id`, or `nil` when the sender put it in `Authorization: Bearer`.
    var recipient: Recipient?
    var title: String
    var body: String
    var notificationID: String?
    var snapshot: JSONObject?
    var open: JSONObject?
    /// A `pw1` end-to-end envelope (docs/e2e.md); `title` and `body` are then the placeholder.
    var encrypted: E2EEnvelope?

    /// Decodes and validates the body. `null` and `""` count as absent for the optional fields
    /// (Home Assistant's `rest_command` renders missing values that way); unknown fields are ignored.
    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        recipient = try fields.optionalString("user_id").map { text throws(APIError) in try Recipient(text) }
        title = try fields.requiredString("title")
        body = try fields.requiredString("body")
        notificationID = try fields.optionalString("notification_id").map {
            try CollapseIDRule.validated($0, field: "notification_id")
        }

        let open = try fields.optionalObject("open")
        if let open {
            let type = try Self.type(of: open, from: Self.openTypes)
            if type == "live" {
                let camera = try open.optionalString("camera_id") ?? open.optionalString("camera_name")
                guard camera != nil else {
                    throw APIError.invalidField("open.camera_id", "open.camera_id or open.camera_name is required when open.type is live.")
                }
            } else {
                _ = try open.requiredNonEmptyString("id")
            }
        }
        if let snapshot = try fields.optionalObject("snapshot") {
            switch try Self.type(of: snapshot, from: Self.snapshotTypes) {
            case "live":
                let camera = try open.flatMap { try $0.optionalString("camera_id") ?? $0.optionalString("camera_name") }
                guard open?.object["type"] == "live" || camera != nil else {
                    throw APIError.invalidField(
                        "open", "A live snapshot takes its camera from open: give open.camera_id or open.camera_name.")
                }
            case "url":
                let url = try snapshot.requiredNonEmptyString("url")
                guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased()), parsed.host != nil else {
                    throw APIError.invalidField("snapshot.url", "snapshot.url must be an http or https URL.")
                }
            default:
                _ = try snapshot.requiredNonEmptyString("id")
            }
            self.snapshot = snapshot.object
        } else {
            self.snapshot = nil
        }
        self.open = open?.object
        encrypted = try EncryptedRule.envelope(fields)
    }

    private static func type(of object: FieldReader, from allowed: [String]) throws -> String {
        guard try object.optionalString("type") != nil else {
            throw APIError.invalidField(object.path(of: "type"), "\(object.path(of: "type")) is required.")
        }
        return try object.optionalChoice("type", from: allowed) ?? ""
    }

    /// The notification (docs/payloads.md): an alert with the snapshot (the app's extension fetches it), the open
    /// target and the notification id as the app's own keys, the id also as the collapse id (a later one replaces it
    /// on screen), and an `https` snapshot URL as the image a platform can show by itself.
    var draft: NotificationDraft {
        var data: JSONObject = [:]
        data["notification_id"] = notificationID.map(JSONValue.string)
        data["snapshot"] = snapshot.map(JSONValue.object)
        data["open"] = open.map(JSONValue.object)
        var imageURL: String?
        if snapshot?["type"]?.stringValue == "url", let url = snapshot?["url"]?.stringValue, url.lowercased().hasPrefix("https://") {
            imageURL = url
        }
        let content = NotificationContent(
            title: title, body: body, imageURL: imageURL, hasMedia: snapshot != nil, data: data, encrypted: encrypted)
        return NotificationDraft(pushType: .alert, priority: .high, collapseID: notificationID, content: content)
    }
}
