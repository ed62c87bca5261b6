import Foundation
import HeraldCore

/// The document the store keeps for an activity, read and written through Herald's own JSON (``JSONValue``), the one
/// JSON stack of the activity's path: the request is read with it, the `aps` is written with it, and so is this.
///
/// `{"id", "slug", "name", "priority", "state", "content", "memory": {"timeline_history", "log_backlog",
/// "countdown_warning_sent", "approval_answer"}, "created_at", "updated_at", "ended_at", "delete_at", "ended_ttl",
/// "stale_ttl", "dismissal_ttl"}`: keys sorted, dates as Unix seconds, absent values left out. It is the shape the
/// `Codable` conformance wrote before, so rows written then read the same (through `JSONDecoder` every value of the
/// content was tried as each type in turn).
extension Activity {
    /// The document the store keeps. Throws when a member cannot be written (a number that is not finite): the change
    /// is refused then (an `EncodingError` naming the member), never stored as an empty document.
    public func storedJSON() throws -> [UInt8] {
        let document = documentJSON
        do {
            return Array(try document.encoded())
        } catch {
            throw Self.unwritable(in: document, error)
        }
    }

    /// An activity from the document ``storedJSON()`` (or the `Codable` conformance before it) wrote; a
    /// `DecodingError` when it is not one.
    public init(storedJSON: some Collection<UInt8>) throws {
        let value: JSONValue
        do {
            value = try JSONValue.decode(Data(storedJSON))
        } catch {
            throw Self.corrupted("the document is not JSON: \(error)")
        }
        try self.init(document: value)
    }

    var documentJSON: JSONValue {
        var object: JSONObject = [
            "id": .string(id.uuidString), "slug": .string(slug), "name": .string(name), "priority": .int(priority),
            "state": .string(state.rawValue), "content": .object(content), "memory": memory.documentJSON,
            "created_at": Self.seconds(createdAt), "updated_at": Self.seconds(updatedAt),
        ]
        object["ended_ttl"] = endedTTL.map(JSONValue.int)
        object["stale_ttl"] = staleTTL.map(JSONValue.int)
        object["dismissal_ttl"] = dismissalTTL.map(JSONValue.int)
        object["ended_at"] = endedAt.map(Self.seconds)
        object["delete_at"] = deleteAt.map(Self.seconds)
        return .object(object)
    }

    init(document value: JSONValue) throws {
        guard case .object(let object) = value else { throw Self.corrupted("the document is not an object") }
        let reader = DocumentReader(object: object)
        guard let id = UUID(uuidString: try reader.string("id")) else { throw Self.corrupted("id is not a UUID") }
        guard let state = ActivityState(rawValue: try reader.string("state")) else { throw Self.corrupted("state is unknown") }
        guard case .object(let content)? = object["content"] else { throw Self.corrupted("content is not an object") }
        self.init(
            id: id, slug: try reader.string("slug"), name: try reader.string("name"), priority: try reader.int("priority"), state: state,
            content: content, endedTTL: try reader.optionalInt("ended_ttl"), staleTTL: try reader.optionalInt("stale_ttl"),
            dismissalTTL: try reader.optionalInt("dismissal_ttl"), createdAt: try reader.date("created_at"),
            updatedAt: try reader.date("updated_at"), endedAt: try reader.optionalDate("ended_at"), deleteAt: try reader.optionalDate("delete_at"),
            memory: try ActivityMemory(document: object["memory"] ?? .object([:])))
    }

    static func seconds(_ date: Date) -> JSONValue { .double(date.timeIntervalSince1970) }

    static func corrupted(_ description: String) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: description))
    }

    /// The error of a document that cannot be written, naming the first member that holds a number that is not finite
    /// (`content.progress`), as `JSONEncoder` named it.
    private static func unwritable(in document: JSONValue, _ error: any Error) -> any Error {
        func path(to value: JSONValue, _ keys: [String]) -> [String]? {
            switch value {
            case .double(let number) where !number.isFinite: return keys
            case .object(let object):
                for (key, member) in object.sorted(by: { $0.key < $1.key }) { if let found = path(to: member, keys + [key]) { return found } }
            case .array(let elements):
                for (index, element) in elements.enumerated() { if let found = path(to: element, keys + ["\(index)"]) { return found } }
            default: break
            }
            return nil
        }
        guard let keys = path(to: document, []) else { return error }
        let context = EncodingError.Context(codingPath: keys.map(DocumentKey.init), debugDescription: "a number that is not finite")
        return EncodingError.invalidValue(Double.nan, context)
    }
}

extension ActivityMemory {
    var documentJSON: JSONValue {
        let series = timelineHistory.mapValues { points in
            JSONValue.array(points.map { ["timestamp": .int($0.timestamp), "value": .double($0.value)] })
        }
        var object: JSONObject = [
            "timeline_history": .object(series), "log_backlog": .array(logBacklog), "countdown_warning_sent": .bool(countdownWarningSent),
        ]
        if let answer = approvalAnswer {
            object["approval_answer"] = [
                "option": .string(answer.option), "by": .string(answer.by.rawValue), "answered_at": Activity.seconds(answer.answeredAt),
            ]
        }
        return .object(object)
    }

    init(document value: JSONValue) throws {
        guard case .object(let object) = value else { throw Activity.corrupted("memory is not an object") }
        self.init()
        if case .array(let lines)? = object["log_backlog"] { logBacklog = lines }
        countdownWarningSent = object["countdown_warning_sent"] == .bool(true)
        if case .object(let series)? = object["timeline_history"] {
            timelineHistory = try series.mapValues { points in
                guard case .array(let points) = points else { throw Activity.corrupted("a timeline series is not an array") }
                return try points.map { point in
                    guard let timestamp = point.objectValue?["timestamp"]?.integerValue, let value = point.objectValue?["value"]?.doubleValue else {
                        throw Activity.corrupted("a timeline point has no timestamp and value")
                    }
                    return TimelinePoint(timestamp: timestamp, value: value)
                }
            }
        }
        if case .object(let answer)? = object["approval_answer"] {
            let reader = DocumentReader(object: answer)
            guard let by = ApprovalAnswer.Taker(rawValue: try reader.string("by")) else { throw Activity.corrupted("approval_answer.by is unknown") }
            approvalAnswer = ApprovalAnswer(option: try reader.string("option"), by: by, answeredAt: try reader.date("answered_at"))
        }
    }
}

/// The members of a stored document, each a `DecodingError` when it is missing or of the wrong type.
private struct DocumentReader {
    let object: JSONObject

    func string(_ key: String) throws -> String {
        guard let value = object[key]?.stringValue else { throw Activity.corrupted("\(key) is not a string") }
        return value
    }

    func int(_ key: String) throws -> Int {
        guard let value = object[key]?.integerValue else { throw Activity.corrupted("\(key) is not an integer") }
        return value
    }

    func optionalInt(_ key: String) throws -> Int? {
        guard let value = object[key], !value.isNull else { return nil }
        return try int(key)
    }

    func date(_ key: String) throws -> Date {
        guard let seconds = object[key]?.doubleValue, seconds.isFinite else { throw Activity.corrupted("\(key) is not a date") }
        return Date(timeIntervalSince1970: seconds)
    }

    func optionalDate(_ key: String) throws -> Date? {
        guard let value = object[key], !value.isNull else { return nil }
        return try date(key)
    }
}

/// A key of the path ``Activity/storedJSON()`` names in its error.
private struct DocumentKey: CodingKey {
    var stringValue: String
    var intValue: Int? { Int(stringValue) }
    init(_ key: String) { stringValue = key }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { stringValue = "\(intValue)" }
}
