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
        return (document, Array(try Self.extrasEncoder.encode(extras)))
    }

    /// An activity from its stored parts; `extras` `nil` when it has none (or was not read: then the activity has no
    /// history and no backlog, and must be written back without its extras).
    public init(storedDocument: some Collection<UInt8>, extras: (some Collection<UInt8>)?) throws {
        try self.init(storedJSON: storedDocument)
        guard let extras, !extras.isEmpty else { return }
        let decoded = try JSONDecoder().decode(ActivityExtras.self, from: Data(extras))
        memory.timelineHistory = decoded.timelineHistory
        memory.logBacklog = decoded.logBacklog
        if template == .timeline, !memory.timelineHistory.isEmpty { content["history"] = TimelineHistory.json(memory.timelineHistory) }
    }

    private static let extrasEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// The extras of a stored activity.
struct ActivityExtras: Codable {
    var timelineHistory: [String: [TimelinePoint]]
    var logBacklog: [JSONValue]

    enum CodingKeys: String, CodingKey {
        case timelineHistory = "timeline_history"
        case logBacklog = "log_backlog"
    }
}
