import Foundation
import HeraldCore

/// How an activity is stored in two parts, so that the part a change of the device reads stays small: the document
/// (everything but the accumulations, at most ``ContentLimits/maximumContentBytes`` of content) and the extras (a
/// timeline's history, a log's backlog: up to ``TimelineHistory/maximumPointsPerSeries`` points a series and
/// ``LogBacklog/maximumBytes``), which only the activity's own change and the reads of the API load.
///
/// ```swift
/// let parts = try activity.storedParts()                       // document, extras (nil: none)
/// let same = try Activity(storedDocument: parts.document, extras: parts.extras)
/// ```
///
/// A document written before the split (the whole activity, ``storedJSON()``) reads as it always did.
extension Activity {
    /// The two parts: the document without the timeline history (in `memory` and in `content.history`) and the log
    /// backlog, and the extras that hold them (`nil` when both are empty). Throws when a member cannot be written.
    public func storedParts() throws -> (document: [UInt8], extras: [UInt8]?) {
        var slim = self
        slim.memory.timelineHistory = [:]
        slim.memory.logBacklog = []
        slim.content["history"] = nil
        let document = try slim.storedJSON()
        guard !memory.timelineHistory.isEmpty || !memory.logBacklog.isEmpty else { return (document, nil) }
        let extras = ActivityExtras(timelineHistory: memory.timelineHistory, logBacklog: memory.logBacklog)
        return (document, Array(try extras.json.encoded()))
    }

    /// An activity from its stored parts; `extras` `nil` when it has none (or was not read: then the activity has no
    /// history and no backlog, and must be written back without its extras).
    public init(storedDocument: some Collection<UInt8>, extras: (some Collection<UInt8>)?) throws {
        try self.init(storedJSON: storedDocument)
        guard let extras, !extras.isEmpty else { return }
        let decoded = try ActivityExtras(json: JSONValue.decode(Data(extras)))
        memory.timelineHistory = decoded.timelineHistory
        memory.logBacklog = decoded.logBacklog
        if template == .timeline, !memory.timelineHistory.isEmpty { content["history"] = TimelineHistory.json(memory.timelineHistory) }
    }

}

/// The extras of a stored activity: `{"log_backlog": [line], "timeline_history": {series: [{timestamp, value}]}}`.
///
/// Read and written through ``JSONValue`` and Herald's own JSON text, not `Codable`: a full log backlog (256 KiB)
/// through `JSONDecoder` tried every type in turn for every value of every line, and was 14 % of Herald's CPU in
/// benchmark scenario 10 (docs/performance.md, "Scenario 10").
struct ActivityExtras {
    var timelineHistory: [String: [TimelinePoint]]
    var logBacklog: [JSONValue]

    init(timelineHistory: [String: [TimelinePoint]], logBacklog: [JSONValue]) {
        self.timelineHistory = timelineHistory
        self.logBacklog = logBacklog
    }

    /// The extras a stored document holds; throws when it is not of that shape.
    init(json: JSONValue) throws {
        guard case .object(let object) = json else { throw Self.corrupted("the extras are not an object") }
        switch object["log_backlog"] {
        case nil, .null?: logBacklog = []
        case .array(let lines)?: logBacklog = lines
        default: throw Self.corrupted("log_backlog is not an array")
        }
        timelineHistory = [:]
        switch object["timeline_history"] {
        case nil, .null?: break
        case .object(let series)?:
            for (name, points) in series {
                guard case .array(let points) = points else { throw Self.corrupted("timeline_history.\(name) is not an array") }
                timelineHistory[name] = try points.map { point in
                    guard let timestamp = point.objectValue?["timestamp"]?.integerValue,
                        let value = point.objectValue?["value"]?.doubleValue
                    else { throw Self.corrupted("timeline_history.\(name) has a point without timestamp and value") }
                    return TimelinePoint(timestamp: timestamp, value: value)
                }
            }
        default: throw Self.corrupted("timeline_history is not an object")
        }
    }

    /// The JSON the store keeps (keys sorted when written).
    var json: JSONValue {
        let series = timelineHistory.mapValues { points in
            JSONValue.array(points.map { ["timestamp": .int($0.timestamp), "value": .double($0.value)] })
        }
        return ["log_backlog": .array(logBacklog), "timeline_history": .object(series)]
    }

    private static func corrupted(_ description: String) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: description))
    }
}
