import Foundation

/// What a send API hands to the pipeline: the content of one notification for one device,
/// before it is fitted, counted and stored.
public struct NotificationDraft: Sendable, Equatable {
    public var pushType: PushType
    /// APNs priority: 10 immediate, 5 power-aware (background pushes must use 5).
    public var priority: Int
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// The APNs-shaped payload: `aps` plus custom top-level keys.
    public var payload: JSONObject
    /// Exempt notifications (commands, critical alerts) don't consume the daily quota.
    public var isExemptFromQuota: Bool
    /// When the notification expires; `nil` for the configured time to live.
    public var expiresAt: Date?

    public init(
        pushType: PushType = .alert, priority: Int = 10, collapseID: String? = nil, payload: JSONObject,
        isExemptFromQuota: Bool = false, expiresAt: Date? = nil
    ) {
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
        self.isExemptFromQuota = isExemptFromQuota
        self.expiresAt = expiresAt
    }
}

/// Fits a payload into the provider's size limit by shortening `aps.alert.body`.
public enum PayloadFitter {
    /// APNs' limit for every push type Herald sends.
    public static let apnsLimit = 4096
    /// What a shortened body ends with.
    public static let ellipsis = "…"

    /// The payload is too large even with an empty body.
    public struct TooLarge: Error, Equatable {
        /// The size with the body shortened as far as it goes.
        public var minimumBytes: Int
        public var limit: Int
    }

    /// Encodes `payload`; if it is over `limit` bytes, shortens `aps.alert.body` at a character boundary
    /// and appends "…" until it fits. `truncated` says whether the body was shortened.
    public static func fit(_ payload: JSONObject, limit: Int = apnsLimit) throws -> (data: Data, truncated: Bool) {
        let full = try JSONValue.object(payload).encoded()
        if full.count <= limit { return (full, false) }
        guard let body = payload.alertBody, !body.isEmpty else {
            throw TooLarge(minimumBytes: full.count, limit: limit)
        }
        let characters = Array(body)
        func encoded(keeping count: Int) throws -> Data {
            let shortened = count == 0 ? "" : String(characters[0..<count]) + ellipsis
            return try JSONValue.object(payload.replacingAlertBody(with: shortened)).encoded()
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
    /// `aps.alert.body`, when the alert is a dictionary with a string body.
    var alertBody: String? {
        self["aps"]?.objectValue?["alert"]?.objectValue?["body"]?.stringValue
    }

    func replacingAlertBody(with body: String) -> JSONObject {
        var copy = self
        guard var aps = copy["aps"]?.objectValue, var alert = aps["alert"]?.objectValue else { return copy }
        alert["body"] = .string(body)
        aps["alert"] = .object(alert)
        copy["aps"] = .object(aps)
        return copy
    }
}
