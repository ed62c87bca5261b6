import Foundation
import HeraldCore

/// The APNs payload of a Live Activity push (`apns-push-type: liveactivity`), at most 4096 bytes.
///
/// ```json
/// {"aps":{"attributes":{"name":"Oven","slug":"oven"},"attributes-type":"HeraldActivityAttributes",
///   "content-state":{"template":"countdown",…},"event":"start","input-push-token":1,"relevance-score":0.3,
///   "alert":{"title":"Oven","body":"Baking"},"stale-date":1763773200,"timestamp":1763769600}}
/// ```
///
/// When the payload would be larger than 4096 bytes: a timeline's history is downsampled (LTTB) until it fits, a log
/// keeps the newest lines that fit, and a media card drops whole optional controls in PushWard's order (`extra`,
/// `volume_down` + `volume_up`, `favorite`, `stop`, `image_thumbhash`, `image_url`, `previous` + `next`). The stored
/// content is never changed by this.
public enum LiveActivityPayload {
    /// APNs' payload limit.
    public static let maximumBytes = 4_096
    /// The default of `HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE`: the app's `ActivityAttributes` struct.
    public static let defaultAttributesType = "HeraldActivityAttributes"

    /// A payload that does not fit in 4096 bytes even after every documented reduction.
    public struct TooLarge: Error, Sendable, Equatable {
        /// The size of the smallest form.
        public var bytes: Int
    }

    /// The message of the push `push` of `activity` (its stored content is the `content-state`), fitted to 4096 bytes.
    /// A message whose size bound (``JSONValue/encodedSizeUpperBound``) is within the limit is not encoded here: the
    /// send pipeline writes it once.
    /// - Parameters:
    ///   - timestamp: `aps.timestamp`, from ``LiveActivityTimestamp/next(after:now:)``.
    ///   - attributesType: `attributes-type` of a start push.
    public static func message(
        activity: Activity, push: ActivityPush, timestamp: Int, attributesType: String = defaultAttributesType, now: Date
    ) throws(TooLarge) -> LiveActivityMessage {
        let message = unfitted(activity: activity, push: push, timestamp: timestamp, attributesType: attributesType)
        if fitsWithoutEncoding(message) { return message }
        return try fitted(activity: activity, push: push, timestamp: timestamp, attributesType: attributesType).message
    }

    /// Whether `message` fits whatever its doubles' text is, known without encoding it.
    static func fitsWithoutEncoding(_ message: LiveActivityMessage) -> Bool {
        JSONValue.object(message.payload).encodedSizeUpperBound <= maximumBytes
    }

    /// The message's JSON text (``message(activity:push:timestamp:attributesType:now:)``), as APNs receives it.
    public static func render(
        activity: Activity, push: ActivityPush, timestamp: Int, attributesType: String = defaultAttributesType, now: Date
    ) throws(TooLarge) -> [UInt8] {
        try fitted(activity: activity, push: push, timestamp: timestamp, attributesType: attributesType).bytes
    }

    /// The fitting: one encoding when it fits as it is (the common case), each reduction one more.
    static func fitted(
        activity: Activity, push: ActivityPush, timestamp: Int, attributesType: String
    ) throws(TooLarge) -> (message: LiveActivityMessage, bytes: [UInt8]) {
        var message = unfitted(activity: activity, push: push, timestamp: timestamp, attributesType: attributesType)
        var bytes = encode(message)
        guard bytes.count > maximumBytes else { return (message, bytes) }
        if case .object(let history)? = message.contentState["history"] {
            // A timeline: aim straight at the number of points per series that fits (from the bytes a point takes),
            // then shrink by a fifth until it does; each try is one encoding of the whole payload.
            var withoutHistory = message
            withoutHistory.contentState["history"] = nil
            let base = encode(withoutHistory).count
            let points = history.values.reduce(0) { $0 + ($1.arrayValue?.count ?? 0) }
            let historyBytes = bytes.count - base
            let perPoint = max(1, historyBytes / max(points, 1))
            let longest = history.values.map { $0.arrayValue?.count ?? 0 }.max() ?? 0
            var target = min(longest - 1, (maximumBytes - base - 16 * history.count) / perPoint / max(history.count, 1))
            while bytes.count > maximumBytes, target >= 2 {
                message.contentState["history"] = .object(history.mapValues { TimelineHistory.downsampled($0, to: target) })
                bytes = encode(message)
                target = min(target - 1, target * 4 / 5)
            }
            if bytes.count > maximumBytes { message.contentState["history"] = nil }
            bytes = encode(message)
        }
        var reductions = ContentState.reductions(of: message.contentState)
        while bytes.count > maximumBytes, let reduce = reductions.first {
            reductions.removeFirst()
            reduce(&message.contentState)
            bytes = encode(message)
        }
        guard bytes.count <= maximumBytes else { throw TooLarge(bytes: bytes.count) }
        return (message, bytes)
    }

    /// The message before any reduction.
    static func unfitted(activity: Activity, push: ActivityPush, timestamp: Int, attributesType: String) -> LiveActivityMessage {
        var message = LiveActivityMessage(
            event: push.event, timestamp: timestamp, contentState: ContentState.wireForm(of: activity, event: push.event),
            relevanceScore: .double(Double(activity.priority) / 10))
        if let staleDate = push.staleDate, push.event != .end { message.staleDate = .int(unixSeconds(staleDate)) }
        if push.event == .end, let dismissalDate = push.dismissalDate { message.dismissalDate = .int(unixSeconds(dismissalDate)) }
        if let alert = push.alert { message.alert = ["title": .string(alert.title), "body": .string(alert.body)] }
        if let sound = push.sound { message.sound = .string(sound) }
        if push.event == .start {
            message.attributesType = attributesType
            message.attributes = ["slug": .string(activity.slug), "name": .string(activity.name)]
            message.asksForPushToken = true
        }
        return message
    }

    /// Only a non-finite double can fail, and content comes from JSON text, which has none.
    static func encode(_ message: LiveActivityMessage) -> [UInt8] {
        (try? JSONValue.object(message.payload).encoded()).map(Array.init) ?? []
    }

    static func unixSeconds(_ date: Date) -> Int { LiveActivityTimestamp.seconds(date) }
}
