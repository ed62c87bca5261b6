import Foundation
import HeraldCore

/// One push in Bark's dialect (Bark's API: `docs/senders.md`, "Bark"), from the path forms (`/:key/:body`,
/// `/:key/:title/:body`, `/:key/:title/:subtitle/:body`), the query string, a form or a JSON body, in that order of
/// precedence: path, then body, then query. Unknown parameters are ignored (`copy`, `call`, `isArchive`, `volume`, …).
struct BarkMessage {
    var title: String?
    var subtitle: String?
    var body: String
    var level: NotificationContent.Level
    var sound: String?
    var badge: Int?
    var icon: String?
    var image: String?
    var group: String?
    var url: String?
    var id: String?

    static let levels: [String: NotificationContent.Level] = [
        "active": .active, "timesensitive": .timeSensitive, "passive": .passive, "critical": .critical,
    ]

    /// `parameters` are the request's, names lowercased (query, form or JSON members as text); `path` the path's
    /// title, subtitle and body where the path gives them.
    init(parameters: [String: String], pathTitle: String? = nil, pathSubtitle: String? = nil, pathBody: String? = nil) throws {
        func value(_ name: String) -> String? {
            guard let value = parameters[name], !value.isEmpty else { return nil }
            return value
        }
        func nonEmpty(_ segment: String?) -> String? { segment.flatMap { $0.isEmpty ? nil : $0 } }
        title = try SenderTextRule.title(nonEmpty(pathTitle) ?? value("title"), field: "title")
        subtitle = try SenderTextRule.title(nonEmpty(pathSubtitle) ?? value("subtitle"), field: "subtitle")
        guard let body = nonEmpty(pathBody) ?? value("body") ?? value("message") ?? value("content") else {
            throw APIError.invalidField("body", "body is required (in the path, the query, a form or JSON).")
        }
        self.body = body
        if let raw = parameters["level"] {
            guard let level = Self.levels[raw.lowercased()] else {
                throw APIError.invalidField("level", "level must be active, timeSensitive, passive or critical; got \"\(raw)\".")
            }
            self.level = level
        } else {
            level = .active
        }
        sound = value("sound")
        if let sound, !ActionButton.isSymbolName(sound.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: "_", with: "")) {
            throw APIError.invalidField("sound", "sound must be the name of a sound (letters, digits, dots, - and _).")
        }
        if let raw = value("badge") {
            guard let badge = Int(raw), (0...99_999).contains(badge) else {
                throw APIError.invalidField("badge", "badge must be a whole number from 0 to 99999; got \"\(raw)\".")
            }
            self.badge = badge
        }
        icon = try value("icon").map { try SenderURLRule.image($0, field: "icon") }
        image = try value("image").map { try SenderURLRule.image($0, field: "image") }
        group = try value("group").map { try HeaderValueRule.validated($0, field: "group") }
        if let group, group.count > 64 {
            throw APIError.invalidField("group", "group must be at most 64 characters; got \(group.count).")
        }
        url = try value("url").map { try SenderURLRule.tap($0, field: "url") }
        id = try SenderTextRule.collapseID(value("id"), field: "id")
    }

    /// Bark's parameters from a JSON object: strings as they are, numbers and booleans as their text (Bark's clients
    /// send `badge` as a number); an array or object for one of Bark's parameters is a 400 naming it.
    static func parameters(json: JSONObject) throws -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in json {
            switch value {
            case .string(let text): result[name.lowercased()] = text
            case .int(let number): result[name.lowercased()] = String(number)
            case .double(let number) where number.isFinite: result[name.lowercased()] = String(number)
            case .bool(let flag): result[name.lowercased()] = flag ? "1" : "0"
            case .null: continue
            default:
                guard !known.contains(name.lowercased()) else {
                    throw APIError.invalidField(name, "\(name) must be a string, a number or a boolean.")
                }
            }
        }
        return result
    }

    /// The parameters Herald reads (the others are ignored, whatever their type).
    static let known: Set<String> = [
        "title", "subtitle", "body", "message", "content", "level", "sound", "badge", "icon", "image", "group", "url", "id", "device_key",
    ]

    /// The notification: the level (critical sounds at full volume and counts against the daily limit of critical alerts),
    /// `group` as the thread, `id` as the collapse id (a later push with the same id replaces it), the image, the tap URL,
    /// and `icon`, `badge` and `sound` as the app's own keys.
    var draft: NotificationDraft {
        var data: JSONObject = [:]
        data["icon_url"] = icon.map(JSONValue.string)
        data["image_url"] = image.map(JSONValue.string)
        data["url"] = url.map(JSONValue.string)
        data["badge"] = badge.map(JSONValue.int)
        data["bark_id"] = id.map(JSONValue.string)
        let sound: NotificationContent.Sound? =
            level == .critical ? .critical : level == .passive ? nil : self.sound.map { .named($0.hasSuffix(".caf") ? $0 : "\($0).caf") } ?? .default
        let content = NotificationContent(
            title: title, subtitle: subtitle, body: body, sound: sound, level: level, thread: group, imageURL: image,
            hasMedia: image != nil, tapURL: url, data: data)
        return NotificationDraft(
            pushType: .alert, priority: .alert(at: level), collapseID: id, content: content, isExemptFromQuota: level == .critical)
    }
}
