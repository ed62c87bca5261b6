import Foundation

// MARK: Stored form

extension NotificationDraft {
    /// The JSON a scheduled send keeps of a sender dialect's draft (ntfy's `delay`): the content as the store keeps a
    /// notification's (``NotificationContent/json``) beside the push type, priority, collapse id and exemption.
    /// A Live Activity token and an expiry time are not kept: a delayed send gets the configured time to live from the
    /// moment it goes out.
    public var storedJSON: JSONObject {
        var json: JSONObject = ["push_type": .string(pushType.rawValue), "priority": .int(priority.apnsValue), "content": .object(content.json)]
        json["collapse_id"] = collapseID.map(JSONValue.string)
        if isExemptFromQuota { json["exempt"] = true }
        return json
    }

    /// Reads what ``storedJSON`` wrote; `nil` when it is not such an object. `priority` is the APNs number, as it was
    /// when the priority was a bare number (``NotificationPriority/init(stored:)``).
    public init?(storedJSON json: JSONObject) {
        guard let pushType = json["push_type"]?.stringValue.flatMap(PushType.init(rawValue:)), case .int(let priority)? = json["priority"],
            let content = json["content"]?.objectValue
        else { return nil }
        self.init(
            pushType: pushType, priority: NotificationPriority(stored: priority), collapseID: json["collapse_id"]?.stringValue,
            content: NotificationContent(json: content), isExemptFromQuota: json["exempt"] == .bool(true))
    }
}
