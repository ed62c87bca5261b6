import Foundation
import HTTPTypes
import HeraldCore

/// One message published in ntfy's dialect, read from any of its three forms (ntfy's `docs/publish.md`): the body as
/// the message with headers or query parameters (`PUT/POST /<topic>`, `GET /<topic>/publish`), or ntfy's JSON
/// (`POST /` and `PUT /`). Validated here, then turned into the one ``NotificationDraft`` (``draft``).
///
/// Parameters are looked up as ntfy does (`readParam`): each name of the parameter table, canonical or alias, first as
/// a header (case-insensitive, RFC 2047 encoded words decoded), then as a lowercase query parameter.
struct NtfyMessage {
    var topic: String
    var message: String
    var title: String?
    /// 1–5; 3 when not given.
    var priority: Int
    var tags: [String]
    var click: String?
    var actions: [NtfyAction]
    var attach: String?
    var filename: String?
    var icon: String?
    var markdown: Bool
    /// ntfy's sequence id (`X-Sequence-ID`, `sid`, JSON `sequence_id`), which updates an earlier message: Herald's
    /// collapse id, so that the later notification replaces the earlier one on the phone.
    var sequenceID: String?
    /// ntfy's `delay` (`at`, `in`) as given: the message goes out later, as a scheduled send (``NtfyDelay``).
    var delay: String?

    /// The parameter names of ntfy's table that Herald reads, canonical first.
    enum Parameter {
        static let message = ["x-message", "message", "m"]
        static let title = ["x-title", "title", "t"]
        static let priority = ["x-priority", "priority", "prio", "p"]
        static let tags = ["x-tags", "tags", "tag", "ta"]
        static let delay = ["x-delay", "delay", "x-at", "at", "x-in", "in"]
        static let actions = ["x-actions", "actions", "action"]
        static let click = ["x-click", "click"]
        static let attach = ["x-attach", "attach", "a"]
        static let markdown = ["x-markdown", "markdown", "md"]
        static let icon = ["x-icon", "icon"]
        static let filename = ["x-filename", "filename", "file", "f"]
        static let sequenceID = ["x-sequence-id", "sequence-id", "sid"]
    }

    /// `PUT/POST /<topic>` and `GET /<topic>/publish`: the body (when there is one) is the message.
    init(topic: String, request input: SenderRequest) throws {
        func parameter(_ names: [String]) -> String? { Self.parameter(names, in: input) }
        self.topic = topic
        delay = parameter(Parameter.delay).flatMap { $0.isEmpty ? nil : $0 }  // ntfy: an empty value is no delay
        filename = parameter(Parameter.filename)
        let messageParameter = parameter(Parameter.message)
        if let messageParameter {
            message = messageParameter
        } else {
            guard let text = input.text, !input.body.contains(0) else { throw Self.attachmentRefused }
            if filename != nil, !text.isEmpty { throw Self.attachmentRefused }
            message = text
        }
        title = try SenderTextRule.title(parameter(Parameter.title), field: "title")
        priority = try Self.priority(parameter(Parameter.priority))
        tags = Self.tags(parameter(Parameter.tags))
        click = try parameter(Parameter.click).flatMap { $0.isEmpty ? nil : try SenderURLRule.tap($0, field: "click") }
        attach = try parameter(Parameter.attach).flatMap { $0.isEmpty ? nil : try SenderURLRule.image($0, field: "attach") }
        icon = try parameter(Parameter.icon).flatMap { $0.isEmpty ? nil : try SenderURLRule.image($0, field: "icon") }
        markdown = Self.isMarkdown(parameter(Parameter.markdown), input: input)
        sequenceID = try SenderTextRule.collapseID(parameter(Parameter.sequenceID), field: "sequence_id")
        actions = try parameter(Parameter.actions).map(NtfyAction.parse(header:)) ?? []
        try finish()
    }

    /// `POST /` with ntfy's JSON: `topic` (required), `message`, `title`, `priority` (a number), `tags`, `click`,
    /// `actions`, `attach`, `filename`, `icon`, `markdown`, `delay`; `email`, `call`, `cache`, `firebase` are ignored.
    /// A member the JSON leaves out is read from the headers and query parameters, as ntfy's server does (Apprise's
    /// `ntfy://` sends its priority, tags and click URL as `X-Priority`, `X-Tags`, `X-Click` beside the JSON).
    init(json: JSONObject, request input: SenderRequest) throws {
        func parameter(_ names: [String]) -> String? { Self.parameter(names, in: input) }
        let fields = FieldReader(json)
        topic = try fields.requiredNonEmptyString("topic")
        delay = try (fields.optionalString("delay") ?? parameter(Parameter.delay)).flatMap { $0.isEmpty ? nil : $0 }
        message = try fields.optionalString("message") ?? ""
        title = try SenderTextRule.title(fields.optionalString("title") ?? parameter(Parameter.title), field: "title")
        switch fields.value("priority") {
        case nil: priority = try Self.priority(parameter(Parameter.priority))
        case .int(let value)?: priority = try Self.priority(String(value))
        case .string(let value)?: priority = try Self.priority(value)
        default: throw Self.invalidPriority
        }
        tags = try fields.optionalStringArray("tags") ?? Self.tags(parameter(Parameter.tags))
        click = try (fields.optionalString("click") ?? parameter(Parameter.click)).flatMap {
            $0.isEmpty ? nil : try SenderURLRule.tap($0, field: "click")
        }
        attach = try (fields.optionalString("attach") ?? parameter(Parameter.attach)).flatMap {
            $0.isEmpty ? nil : try SenderURLRule.image($0, field: "attach")
        }
        icon = try (fields.optionalString("icon") ?? parameter(Parameter.icon)).flatMap {
            $0.isEmpty ? nil : try SenderURLRule.image($0, field: "icon")
        }
        filename = try fields.optionalString("filename") ?? parameter(Parameter.filename)
        markdown = try fields.optionalBool("markdown") ?? Self.isMarkdown(parameter(Parameter.markdown), input: input)
        sequenceID = try SenderTextRule.collapseID(
            fields.optionalString("sequence_id") ?? parameter(Parameter.sequenceID), field: "sequence_id")
        switch fields.value("actions") {
        case nil: actions = try parameter(Parameter.actions).map(NtfyAction.parse(header:)) ?? []
        case .array(let elements)?: actions = try NtfyAction.parse(json: elements)
        default: throw APIError.invalidField("actions", "actions must be an array of action objects.")
        }
        try finish()
    }

    /// ntfy's `readParam`: each name as a header (case-insensitive, RFC 2047 decoded), then as a query parameter.
    static func parameter(_ names: [String], in input: SenderRequest) -> String? {
        for name in names {
            if let value = input.header(name) ?? input.query[name] { return value }
        }
        return nil
    }

    static func tags(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func isMarkdown(_ parameter: String?, input: SenderRequest) -> Bool {
        ["1", "yes", "true"].contains(parameter?.lowercased() ?? "")
            || input.headers[.contentType]?.lowercased().hasPrefix("text/markdown") == true
    }

    private mutating func finish() throws {
        guard tags.count <= 20, tags.allSatisfy({ $0.count <= 64 }) else {
            throw APIError.invalidField("tags", "tags must be at most 20 tags of at most 64 characters each.")
        }
        // ntfy sends "triggered" for an empty message.
        if message.isEmpty { message = "triggered" }
    }

    // MARK: Rules

    static let attachmentRefused = APIError.invalidField(
        "body",
        "The body is a file, not UTF-8 text: Herald does not store files. Send a text message and give the file's URL as attach.")
    static let invalidPriority = APIError.invalidField(
        "priority", "priority must be 1-5 or one of min, low, default, high, max, urgent.")

    /// ntfy's priorities: 1–5 and their names (`urgent` is `max`).
    static func priority(_ raw: String?) throws -> Int {
        guard let raw = raw?.trimmingCharacters(in: .whitespaces).lowercased(), !raw.isEmpty else { return 3 }
        switch raw {
        case "1", "min": return 1
        case "2", "low": return 2
        case "3", "default": return 3
        case "4", "high": return 4
        case "5", "max", "urgent": return 5
        default: throw invalidPriority
        }
    }

    /// Herald's level of an ntfy priority: 1–2 passive, 3 active, 4–5 time-sensitive.
    static func level(priority: Int) -> NotificationContent.Level {
        switch priority {
        case ...2: .passive
        case 3: .active
        default: .timeSensitive
        }
    }

    /// The notification: tags that name an emoji before the title (or before the message when there is no title), as
    /// ntfy's apps show them; the other tags as the app's `tags` key. `markdown` is shown as the plain text it is.
    var draft: NotificationDraft {
        let emojis = tags.compactMap { NtfyEmoji.emoji(for: $0) }.joined()
        let otherTags = tags.filter { NtfyEmoji.emoji(for: $0) == nil }
        var shownTitle = title
        var shownMessage = message
        if !emojis.isEmpty {
            if let title { shownTitle = "\(emojis) \(title)" } else { shownMessage = "\(emojis) \(message)" }
        }
        var data: JSONObject = ["ntfy_topic": .string(topic)]
        if !otherTags.isEmpty { data["tags"] = .array(otherTags.map(JSONValue.string)) }
        data["icon_url"] = icon.map(JSONValue.string)
        data["url"] = click.map(JSONValue.string)
        data["image_url"] = attach.map(JSONValue.string)
        let level = Self.level(priority: priority)
        let content = NotificationContent(
            title: shownTitle, body: shownMessage, sound: level == .passive ? nil : .default, level: level, imageURL: attach,
            hasMedia: attach != nil, actions: actions.map(\.herald.action), tapURL: click, data: data)
        return NotificationDraft(pushType: .alert, priority: .alert(at: level), collapseID: sequenceID, content: content)
    }
}
