import Foundation

/// One Live Activity push (`apns-push-type: liveactivity`): the `aps` dictionary ActivityKit reads, as a value.
///
/// Herald's own activities (HeraldActivities), Home Assistant's Live Activities and the APNs double all build or read
/// this one type; ``aps`` is the only place the dictionary is written, ``content`` the only place it becomes a
/// notification's content (no bytes in between).
///
/// ```swift
/// let message = LiveActivityMessage(event: .update, timestamp: 1_763_769_600, contentState: ["progress": 0.5])
/// message.aps            // ["timestamp": 1763769600, "event": "update", "content-state": {"progress": 0.5}]
/// let content = message.content()  // the APNs raw part, and the alert's title and body for every other surface
/// ```
///
/// The dates, the relevance score, the alert and the sound are JSON values: Herald's activities give Unix seconds, a
/// number and `{"title", "body"}`; Home Assistant's relay copies what the caller gave.
public struct LiveActivityMessage: Sendable, Equatable {
    /// `aps.event`.
    public enum Event: String, Sendable, Equatable, CaseIterable, Codable {
        case start
        case update
        case end
    }

    public var event: Event
    /// `aps.timestamp`: Unix seconds, strictly increasing per activity (``LiveActivityTimestamp``).
    public var timestamp: Int
    /// `aps.content-state`: what the widget shows.
    public var contentState: JSONObject
    /// `aps.stale-date`.
    public var staleDate: JSONValue?
    /// `aps.dismissal-date` (an end).
    public var dismissalDate: JSONValue?
    /// `aps.relevance-score`.
    public var relevanceScore: JSONValue?
    /// `aps.alert`: `{"title", "body"}` or whatever the relay was given.
    public var alert: JSONValue?
    /// `aps.sound`.
    public var sound: JSONValue?
    /// `aps.attributes-type` (a start): the app's `ActivityAttributes` type.
    public var attributesType: String?
    /// `aps.attributes` (a start).
    public var attributes: JSONObject?
    /// `aps.input-push-token: 1` (a start that asks the app for the activity's update token).
    public var asksForPushToken: Bool

    public init(
        event: Event, timestamp: Int, contentState: JSONObject, staleDate: JSONValue? = nil, dismissalDate: JSONValue? = nil,
        relevanceScore: JSONValue? = nil, alert: JSONValue? = nil, sound: JSONValue? = nil, attributesType: String? = nil,
        attributes: JSONObject? = nil, asksForPushToken: Bool = false
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.sound = sound
        self.attributesType = attributesType
        self.attributes = attributes
        self.asksForPushToken = asksForPushToken
    }

    /// Reads a Live Activity `aps` (the APNs double's checks): `nil` without an integer `timestamp` or a known `event`.
    public init?(aps: JSONObject) {
        guard case .int(let timestamp)? = aps["timestamp"], let event = aps["event"]?.stringValue.flatMap(Event.init(rawValue:)) else {
            return nil
        }
        self.init(
            event: event, timestamp: timestamp, contentState: aps["content-state"]?.objectValue ?? [:], staleDate: aps["stale-date"],
            dismissalDate: aps["dismissal-date"], relevanceScore: aps["relevance-score"], alert: aps["alert"], sound: aps["sound"],
            attributesType: aps["attributes-type"]?.stringValue, attributes: aps["attributes"]?.objectValue,
            asksForPushToken: aps["input-push-token"] == .int(1))
    }

    /// The `aps` dictionary.
    public var aps: JSONObject {
        var aps: JSONObject = ["timestamp": .int(timestamp), "event": .string(event.rawValue), "content-state": .object(contentState)]
        aps["stale-date"] = staleDate
        aps["dismissal-date"] = dismissalDate
        aps["relevance-score"] = relevanceScore
        aps["alert"] = alert
        aps["sound"] = sound
        aps["attributes-type"] = attributesType.map(JSONValue.string)
        aps["attributes"] = attributes.map(JSONValue.object)
        if asksForPushToken { aps["input-push-token"] = 1 }
        return aps
    }

    /// The whole APNs payload: `{"aps": …}`.
    public var payload: JSONObject { ["aps": .object(aps)] }

    /// Where the alert's body sits, the part the send pipeline may shorten.
    public static let bodyPath = ["aps", "alert", "body"]

    /// The notification's content: the payload as the APNs raw part (sent as it is), and the alert's title and body
    /// for every other surface (the WebSocket event).
    /// - Parameter aps: the `aps` to send, when the caller rewrote ``aps`` (Home Assistant's firebase-admin spelling).
    public func content(aps rewritten: JSONObject? = nil) -> NotificationContent {
        let alert = rewritten.map { $0["alert"] } ?? alert
        let title = alert?.objectValue?["title"]?.stringValue
        let body = alert?.stringValue ?? alert?.objectValue?["body"]?.stringValue
        let payload: JSONObject = rewritten.map { ["aps": .object($0)] } ?? payload
        return NotificationContent(
            title: title, body: body, providerPayloads: [Platform.apns.rawValue: .init(payload: payload, bodyPath: Self.bodyPath)])
    }
}

/// The one rule for `aps.timestamp`: Unix seconds, strictly increasing per activity (or per Home Assistant activity
/// token), so that iOS never drops an update as older than the one before, even when two go out in the same second.
/// The last timestamp is kept in the store (``ActivityRecord/pushedTimestamp``,
/// ``ActivityStore/nextLiveActivityTimestamp(token:now:)``), so it also increases across restarts and instances.
public enum LiveActivityTimestamp {
    /// The timestamp after `previous` (`nil`: none yet) at `now`.
    public static func next(after previous: Int?, now: Date) -> Int {
        next(after: previous, nowSeconds: seconds(now))
    }

    /// The same, with `now` in whole Unix seconds.
    public static func next(after previous: Int?, nowSeconds: Int) -> Int {
        guard let previous else { return nowSeconds }
        let (following, overflow) = previous.addingReportingOverflow(1)
        return overflow ? previous : max(nowSeconds, following)
    }

    /// Whole Unix seconds (rounded down).
    public static func seconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, seconds > Double(Int.min / 2), seconds < Double(Int.max / 2) else { return 0 }
        return Int(seconds)
    }
}
