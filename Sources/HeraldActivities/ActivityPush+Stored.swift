import Foundation
import HeraldCore

/// How the push that unpushed changes ask for is kept (``ActivityRecord/pendingPush``), through Herald's own JSON
/// (``JSONValue``), as the rest of the activity's path is:
/// `{"event": "update", "alert": {"title", "body"}, "sound", "staleDate", "dismissalDate", "isAlerting"}`, dates as
/// seconds since 2001-01-01 (the shape `JSONEncoder` wrote before, so rows written then read the same).
extension ActivityPush {
    /// The stored JSON.
    public func storedJSON() throws -> Data {
        var object: JSONObject = ["event": .string(event.rawValue), "isAlerting": .bool(isAlerting)]
        if let alert { object["alert"] = ["title": .string(alert.title), "body": .string(alert.body)] }
        object["sound"] = sound.map(JSONValue.string)
        object["staleDate"] = staleDate.map { .double($0.timeIntervalSinceReferenceDate) }
        object["dismissalDate"] = dismissalDate.map { .double($0.timeIntervalSinceReferenceDate) }
        return try JSONValue.object(object).encoded()
    }

    /// A push from what ``storedJSON()`` wrote; `nil` for anything else.
    public init?(storedJSON: Data) {
        guard let object = try? JSONValue.decode(storedJSON).objectValue,
            let event = object["event"]?.stringValue.flatMap(ActivityEvent.init(rawValue:))
        else { return nil }
        func date(_ key: String) -> Date? {
            guard let seconds = object[key]?.doubleValue, seconds.isFinite else { return nil }
            return Date(timeIntervalSinceReferenceDate: seconds)
        }
        let alert = object["alert"]?.objectValue.flatMap { alert -> ActivityAlert? in
            guard let title = alert["title"]?.stringValue, let body = alert["body"]?.stringValue else { return nil }
            return ActivityAlert(title: title, body: body)
        }
        self.init(
            event: event, alert: alert, sound: object["sound"]?.stringValue, staleDate: date("staleDate"), dismissalDate: date("dismissalDate"),
            isAlerting: object["isAlerting"] == .bool(true))
    }
}
