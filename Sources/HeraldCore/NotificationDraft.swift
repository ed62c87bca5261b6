import Foundation

/// What a send API hands to the pipeline: the content of one notification for one device, before it is rendered
/// for the device's provider, fitted, counted and stored.
public struct NotificationDraft: Sendable, Equatable {
    public var pushType: PushType
    /// How urgently to deliver it (background pushes must use ``NotificationPriority/normal``). A renderer may lower
    /// it for its provider (FCM: a passive notification is sent at normal priority).
    public var priority: NotificationPriority
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// What the notification says, for every provider.
    public var content: NotificationContent
    /// Exempt notifications (commands, critical alerts) don't consume the daily quota.
    public var isExemptFromQuota: Bool
    /// When the notification expires; `nil` for the configured time to live.
    public var expiresAt: Date?
    /// For a Live Activity push: the token it goes to instead of the device's (``PushNotification/liveActivityToken``).
    public var liveActivityToken: String?

    public init(
        pushType: PushType = .alert, priority: NotificationPriority = .high, collapseID: String? = nil, content: NotificationContent,
        isExemptFromQuota: Bool = false, expiresAt: Date? = nil, liveActivityToken: String? = nil
    ) {
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.content = content
        self.isExemptFromQuota = isExemptFromQuota
        self.expiresAt = expiresAt
        self.liveActivityToken = liveActivityToken
    }
}

/// Fits a payload into a provider's size limit by shortening its body (``PayloadRenderer/fitted(_:priority:collapseID:)``).
public enum PayloadFitter {
    /// What a shortened body ends with.
    public static let ellipsis = "…"

    /// The payload is too large even with an empty body.
    public struct TooLarge: Error, Equatable {
        /// The size with the body shortened as far as it goes.
        public var minimumBytes: Int
        public var limit: Int
    }

    /// Encodes `payload`; if it is over `limit` bytes, shortens the string at `bodyPath` at a character boundary
    /// and appends "…" until it fits. `truncated` says whether the body was shortened.
    public static func fit(_ payload: JSONObject, limit: Int, bodyPath: [String]?) throws -> (data: Data, truncated: Bool) {
        let full = try JSONValue.object(payload).encoded()
        if full.count <= limit { return (full, false) }
        guard let bodyPath, let body = payload.string(at: bodyPath), !body.isEmpty else {
            throw TooLarge(minimumBytes: full.count, limit: limit)
        }
        let characters = Array(body)
        func encoded(keeping count: Int) throws -> Data {
            let shortened = count == 0 ? "" : String(characters[0..<count]) + ellipsis
            return try JSONValue.object(payload.replacingString(at: bodyPath, with: shortened)).encoded()
        }
        // Binary search for the longest prefix that fits.
        var low = 0
        var high = characters.count - 1
        var best: Data?
        while low <= high {
            let middle = (low + high) / 2
            let candidate = try encoded(keeping: middle)
            if candidate.count <= limit {
                best = candidate
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        guard let best else {
            throw TooLarge(minimumBytes: try encoded(keeping: 0).count, limit: limit)
        }
        return (best, true)
    }
}

extension JSONObject {
    /// The string at a path of object keys, e.g. `["aps", "alert", "body"]`.
    public func string(at path: [String]) -> String? {
        guard let first = path.first else { return nil }
        if path.count == 1 { return self[first]?.stringValue }
        return self[first]?.objectValue?.string(at: Array(path.dropFirst()))
    }

    /// A copy with the string at `path` replaced; unchanged when nothing is there.
    func replacingString(at path: [String], with text: String) -> JSONObject {
        guard let first = path.first, self[first] != nil else { return self }
        var copy = self
        if path.count == 1 {
            copy[first] = .string(text)
        } else if let inner = self[first]?.objectValue {
            copy[first] = .object(inner.replacingString(at: Array(path.dropFirst()), with: text))
        }
        return copy
    }
}
