import Foundation
import HeraldCore

/// The `aps` timestamp of a Live Activity push: Unix seconds, strictly increasing per activity, so that iOS never
/// drops an update as older than the one before, even when two go out in the same second.
public enum ActivityTimestamp {
    /// The timestamp for the next push of an activity whose last push carried `previous`.
    public static func next(after previous: Int?, now: Date) -> Int {
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        guard let previous else { return seconds }
        return max(seconds, previous + 1)
    }
}

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

    /// Renders the push `push` of `activity` (its stored content is the `content-state`).
    /// - Parameters:
    ///   - timestamp: `aps.timestamp`, from ``ActivityTimestamp/next(after:now:)``.
    ///   - attributesType: `attributes-type` of a start push.
    public static func render(
        activity: Activity, push: ActivityPush, timestamp: Int, attributesType: String = defaultAttributesType, now: Date
    ) throws(TooLarge) -> [UInt8] {
        var contentState = ContentState.wireForm(of: activity, event: push.event)
        var bytes = encode(activity: activity, push: push, contentState: contentState, timestamp: timestamp, attributesType: attributesType)
        if bytes.count > maximumBytes, case .object(let history)? = contentState["history"] {
            // A timeline: aim straight at the number of points per series that fits (from the bytes a point takes),
            // then shrink by a fifth until it does; each try is one encoding of the whole payload.
            var withoutHistory = contentState
            withoutHistory["history"] = nil
            let base = encode(activity: activity, push: push, contentState: withoutHistory, timestamp: timestamp, attributesType: attributesType).count
            let points = history.values.reduce(0) { $0 + ($1.arrayValue?.count ?? 0) }
            let historyBytes = bytes.count - base
            let perPoint = max(1, historyBytes / max(points, 1))
            let longest = history.values.map { $0.arrayValue?.count ?? 0 }.max() ?? 0
            var target = min(longest - 1, (maximumBytes - base - 16 * history.count) / perPoint / max(history.count, 1))
            while bytes.count > maximumBytes, target >= 2 {
                contentState["history"] = .object(history.mapValues { TimelineHistory.downsampled($0, to: target) })
                bytes = encode(activity: activity, push: push, contentState: contentState, timestamp: timestamp, attributesType: attributesType)
                target = min(target - 1, target * 4 / 5)
            }
            if bytes.count > maximumBytes { contentState["history"] = nil }
            bytes = encode(activity: activity, push: push, contentState: contentState, timestamp: timestamp, attributesType: attributesType)
        }
        var reductions = ContentState.reductions(of: contentState)
        while bytes.count > maximumBytes, let reduce = reductions.first {
            reductions.removeFirst()
            reduce(&contentState)
            bytes = encode(activity: activity, push: push, contentState: contentState, timestamp: timestamp, attributesType: attributesType)
        }
        guard bytes.count <= maximumBytes else { throw TooLarge(bytes: bytes.count) }
        return bytes
    }

    static func encode(activity: Activity, push: ActivityPush, contentState: JSONObject, timestamp: Int, attributesType: String) -> [UInt8] {
        var aps: JSONObject = [
            "timestamp": .int(timestamp),
            "event": .string(push.event.rawValue),
            "content-state": .object(contentState),
            "relevance-score": .double(Double(activity.priority) / 10),
        ]
        if let staleDate = push.staleDate, push.event != .end { aps["stale-date"] = .int(unixSeconds(staleDate)) }
        if push.event == .end, let dismissalDate = push.dismissalDate { aps["dismissal-date"] = .int(unixSeconds(dismissalDate)) }
        if let alert = push.alert { aps["alert"] = ["title": .string(alert.title), "body": .string(alert.body)] }
        if let sound = push.sound { aps["sound"] = .string(sound) }
        if push.event == .start {
            aps["attributes-type"] = .string(attributesType)
            aps["attributes"] = ["slug": .string(activity.slug), "name": .string(activity.name)]
            aps["input-push-token"] = 1
        }
        // Only a non-finite double can fail, and content comes from JSON text, which has none.
        return (try? JSONValue.object(["aps": .object(aps)]).encoded()).map(Array.init) ?? []
    }

    static func unixSeconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }
}
