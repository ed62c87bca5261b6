import Foundation
import HeraldCore

/// Uptime Kuma's webhook notification (its "Webhook" type, "application/json" body): `{heartbeat, monitor, msg}`, where
/// `heartbeat` and `monitor` are `null` for the "Test" button. A monitor's down and up share the collapse id
/// `kuma-<monitor id>`, so that up replaces down on the phone.
///
/// | `heartbeat.status` | title | level |
/// |---|---|---|
/// | 0 (down) | `<monitor> is down` | time-sensitive |
/// | 1 (up) | `<monitor> is up` | active |
/// | 2 (pending) | `<monitor> is pending` | active |
/// | 3 (maintenance) | `<monitor> is in maintenance` | passive |
struct UptimeKumaPreset {
    var draft: NotificationDraft

    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        let message = try fields.optionalString("msg")
        let monitor = try fields.optionalObject("monitor")
        let heartbeat = try fields.optionalObject("heartbeat")
        let name = try monitor?.optionalString("name") ?? "Uptime Kuma"
        let title: String
        let level: NotificationContent.Level
        switch heartbeat?.value("status") {
        case .int(0)?: (title, level) = ("\(name) is down", .timeSensitive)
        case .int(1)?: (title, level) = ("\(name) is up", .active)
        case .int(2)?: (title, level) = ("\(name) is pending", .active)
        case .int(3)?: (title, level) = ("\(name) is in maintenance", .passive)
        case nil: (title, level) = (name, .active)
        default: throw APIError.invalidField("heartbeat.status", "heartbeat.status must be 0 (down), 1 (up), 2 (pending) or 3 (maintenance).")
        }
        let body = try heartbeat?.optionalString("msg") ?? message ?? title
        let collapseID: String? =
            switch monitor?.value("id") {
            case .int(let id)?: "kuma-\(id)"
            case .string(let id)?: try SenderTextRule.collapseID("kuma-\(id)", field: "monitor.id")
            default: nil
            }
        let url = (try monitor?.optionalString("url")).flatMap { try? SenderURLRule.image($0, field: "monitor.url") }
        var data: JSONObject = ["source": "uptime-kuma"]
        data["url"] = url.map(JSONValue.string)
        let content = NotificationContent(
            title: AlertPreset.clipped(title, to: SenderTextRule.maximumTitleLength), body: body,
            sound: level == .passive ? nil : .default, level: level, thread: "uptime-kuma", tapURL: url, data: data)
        draft = NotificationDraft(pushType: .alert, priority: .alert(at: level), collapseID: collapseID, content: content)
    }
}

/// Any JSON webhook: the query names where the title and the body are (`?title=$.alert.name&body=$.alert.text`), and
/// optionally the collapse id (`collapse=`), the tap URL (`url=`) and a fixed level (`level=`). A path is dotted member
/// names with `[n]` indices, `$.` optional. Without `body=`, the body is the first of `message`, `text`, `body`; without
/// `title=`, `title` or none.
struct GenericPreset {
    var draft: NotificationDraft

    init(_ json: JSONObject, query: [String: String]) throws {
        func text(_ parameter: String, defaults: [String]) throws -> String? {
            if let path = query[parameter], !path.isEmpty {
                guard let value = try Self.value(at: path, in: .object(json), parameter: parameter) else {
                    throw APIError.invalidField(parameter, "\(parameter)=\(path) names nothing in the body.")
                }
                return value
            }
            return defaults.lazy.compactMap { json[$0].flatMap(Self.text) }.first
        }
        guard let body = try text("body", defaults: ["message", "text", "body"]), !body.isEmpty else {
            throw APIError.invalidField("body", "The body is empty: name its JSON path with ?body=$.path (message, text and body were not found).")
        }
        let title = try SenderTextRule.title(try text("title", defaults: ["title"]), field: "title")
        let collapseID = try SenderTextRule.collapseID(try text("collapse", defaults: []), field: "collapse")
        let url = try text("url", defaults: []).map { try SenderURLRule.tap($0, field: "url") }
        let level: NotificationContent.Level
        if let raw = query["level"], !raw.isEmpty {
            guard let chosen = NotificationContent.Level(rawValue: raw), chosen != .critical else {
                throw APIError.invalidField("level", "level must be passive, active or time-sensitive; got \"\(raw)\".")
            }
            level = chosen
        } else {
            level = .active
        }
        var data: JSONObject = ["source": "webhook"]
        data["url"] = url.map(JSONValue.string)
        let content = NotificationContent(
            title: title, body: body, sound: level == .passive ? nil : .default, level: level, thread: "webhook", tapURL: url, data: data)
        draft = NotificationDraft(pushType: .alert, priority: .alert(at: level), collapseID: collapseID, content: content)
    }

    static func text(_ value: JSONValue) -> String? {
        switch value {
        case .string(let string): string
        case .int(let number): String(number)
        case .double(let number) where number.isFinite: String(number)
        case .bool(let flag): String(flag)
        default: nil
        }
    }

    /// The text at `path` (`$.a.b[0].c`), `nil` when nothing is there; 400 for a path that does not parse.
    static func value(at path: String, in root: JSONValue, parameter: String) throws -> String? {
        var rest = Substring(path)
        if rest.hasPrefix("$") { rest = rest.dropFirst() }
        if rest.hasPrefix(".") { rest = rest.dropFirst() }
        guard rest.count <= 256 else { throw APIError.invalidField(parameter, "\(parameter) must be a JSON path of at most 256 characters.") }
        var current = root
        for part in rest.split(separator: ".", omittingEmptySubsequences: false) {
            var name = part
            var indices: [Int] = []
            while name.hasSuffix("]"), let open = name.lastIndex(of: "[") {
                guard let index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]), index >= 0 else {
                    throw APIError.invalidField(parameter, "\(parameter) has an index that is not a whole number: \(path).")
                }
                indices.insert(index, at: 0)
                name = name[..<open]
            }
            if !name.isEmpty {
                guard case .object(let object) = current, let next = object[String(name)] else { return nil }
                current = next
            }
            for index in indices {
                guard case .array(let elements) = current, index < elements.count else { return nil }
                current = elements[index]
            }
        }
        return text(current)
    }
}
