import Foundation
import HeraldCore

/// Renders a notification's content as an FCM `message` without its target (docs/payloads.md): a notification
/// message that Android shows by itself, or, when the notification has buttons, a data-only message that the app
/// draws (only an app can draw buttons). The dialect's own keys travel in `data`, as strings. A `pw1` end-to-end
/// envelope travels as `data.encrypted`, in a data-only message too: only the app holds the key to open it, and Android
/// would show a notification message's placeholder by itself.
public struct FCMRenderer: PayloadRenderer {
    /// FCM's limit for a message to a device is 4096 bytes; the stored message keeps 32 bytes free for the
    /// `android.ttl` the provider adds at send time (`"android":{"ttl":"2419200s"}` at most).
    public static let limit = 4096 - 32
    /// Where the body sits in a message with a `notification` block.
    public static let notificationBodyPath = ["notification", "body"]
    /// `android.notification.notification_priority` for each level.
    static let notificationPriority: [NotificationContent.Level: String] = [
        .passive: "PRIORITY_LOW", .active: "PRIORITY_DEFAULT", .timeSensitive: "PRIORITY_HIGH", .critical: "PRIORITY_MAX",
    ]

    public let name = Platform.fcm.rawValue
    public let sizeLimit = Self.limit

    public init() {}

    /// `android.priority` for a priority: `HIGH` for ``NotificationPriority/high``, `NORMAL` for the others (FCM has two).
    public static func androidPriority(_ priority: NotificationPriority) -> String {
        switch priority {
        case .high: "HIGH"
        case .normal, .low: "NORMAL"
        }
    }

    /// `level` decides the delivery priority (``NotificationPriority/alert(at:)``): `passive` is `NORMAL` (and the
    /// notification is kept at normal priority), every other level `HIGH`: Android shows a notification at once only
    /// from a high-priority message, whatever the draft's priority.
    public func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        let isPassive = content.level == .passive
        var data = FCMData.strings(content.data)
        data["level"] = content.level.map { .string($0.rawValue) }
        var android: JSONObject = ["priority": .string(Self.androidPriority(.alert(at: content.level)))]
        android["collapse_key"] = collapseID.map(JSONValue.string)
        var message: JSONObject = [:]
        let bodyPath: [String]
        data["encrypted"] = content.encrypted.map { .string($0.text) }
        if !content.actions.isEmpty || content.encrypted != nil {
            data["title"] = content.title.map(JSONValue.string)
            data["body"] = content.body.map(JSONValue.string)
            if !content.actions.isEmpty {
                data["actions"] = .string(FCMData.string(.array(content.actions.map { .object($0.json) })))
            }
            bodyPath = ["data", "body"]
        } else {
            var notification: JSONObject = [:]
            notification["title"] = content.title.map(JSONValue.string)
            notification["body"] = content.body.map(JSONValue.string)
            notification["image"] = content.imageURL.map(JSONValue.string)
            message["notification"] = .object(notification)
            var androidNotification: JSONObject = [:]
            androidNotification["notification_priority"] = content.level.map { .string(Self.notificationPriority[$0] ?? "PRIORITY_DEFAULT") }
            switch content.sound {
            case .default?, .critical?: androidNotification["sound"] = "default"
            case .named(let name)?: androidNotification["sound"] = .string(name)
            case nil: break
            }
            androidNotification["channel_id"] = content.thread.map(JSONValue.string)
            androidNotification["tag"] = collapseID.map(JSONValue.string)
            android["notification"] = .object(androidNotification)
            bodyPath = Self.notificationBodyPath
        }
        if !data.isEmpty { message["data"] = .object(data) }
        message["android"] = .object(android)
        return RenderedPayload(payload: message, bodyPath: bodyPath, priority: isPassive ? .normal : priority)
    }
}

/// Values as FCM `data` takes them (a map of strings).
public enum FCMData {
    /// Strings as they are, numbers and booleans as their JSON text, objects and arrays as compact JSON.
    public static func string(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return ""
        default: return (try? value.encoded()).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
    }

    /// Every value of `object` as a string; `null` values are left out.
    public static func strings(_ object: JSONObject) -> JSONObject {
        var data: JSONObject = [:]
        for (key, value) in object where value != .null { data[key] = .string(string(value)) }
        return data
    }
}
