import Foundation
import HeraldCore

/// Renders a notification's content as the APNs payload: `aps` and the dialect's own keys at the top level
/// (docs/payloads.md). WebSocket-only devices get the same payload in their event.
public struct APNsRenderer: PayloadRenderer {
    /// APNs' limit for every push type Herald sends.
    public static let limit = 4096
    /// Where the body sits.
    public static let bodyPath = ["aps", "alert", "body"]
    /// The one notification category the app registers for notifications with buttons; the buttons themselves
    /// travel in the payload's `actions` and the app's Notification Service Extension installs them.
    public static let actionsCategory = "HERALD_ACTIONS"
    /// The top-level key of a `pw1` end-to-end envelope (docs/e2e.md): the app's Notification Service Extension opens
    /// it (hence `mutable-content: 1`) and replaces the placeholder alert with what it holds.
    public static let encryptedKey = "encrypted"
    /// `aps.sound` of a critical alert: full volume (unless the content has a ``NotificationContent/criticalVolume``), the
    /// default sound.
    static let criticalSound: JSONValue = ["critical": 1, "name": "default", "volume": 1.0]

    /// `apns-priority` for a priority: `10`, `5` or `1`.
    public static func priorityHeader(_ priority: NotificationPriority) -> String {
        switch priority {
        case .high: "10"
        case .normal: "5"
        case .low: "1"
        }
    }

    public let name = Platform.apns.rawValue
    public let sizeLimit = Self.limit

    public init() {}

    public func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        var alert: JSONObject = [:]
        alert["title"] = content.title.map(JSONValue.string)
        alert["subtitle"] = content.subtitle.map(JSONValue.string)
        alert["body"] = content.body.map(JSONValue.string)
        var aps: JSONObject = [:]
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        aps["interruption-level"] = content.level.map { .string($0.rawValue) }
        switch content.sound {
        case .default?: aps["sound"] = "default"
        case .named(let name)?: aps["sound"] = .string(name)
        case .critical?:
            aps["sound"] = content.criticalVolume.map { ["critical": 1, "name": "default", "volume": .double($0)] } ?? Self.criticalSound
        case nil: break
        }
        aps["thread-id"] = content.thread.map(JSONValue.string)
        let hasActions = !content.actions.isEmpty
        if hasActions { aps["category"] = .string(Self.actionsCategory) }
        if hasActions || content.hasMedia || content.encrypted != nil { aps["mutable-content"] = 1 }

        var payload = content.data
        if hasActions { payload["actions"] = .array(content.actions.map { .object($0.json) }) }
        payload[Self.encryptedKey] = content.encrypted.map { .string($0.text) }
        payload["aps"] = .object(aps)
        return RenderedPayload(payload: payload, bodyPath: Self.bodyPath, priority: priority)
    }
}
