import Foundation
import HeraldCore

/// One of ntfy's action buttons (`docs/publish.md`, "Action buttons"), as Herald's ``ActionButton``: `view` opens
/// its URL (in the foreground when it is `https`), `http` is the request the app makes in the background (ntfy's
/// default method, `POST`). `broadcast` is Android's intent and has no meaning for Herald's apps: a 400.
struct NtfyAction {
    var kind: String
    var label: String
    var url: String
    var clear: Bool
    var method: String?
    var headers: [String: String]
    var body: String?
    /// The button as Herald's apps receive it.
    var herald: ActionButton

    static let maximumCount = 3

    /// `X-Actions`: a JSON array, or ntfy's short format (`view, Open, https://…, clear=true; http, Close, https://…`).
    static func parse(header: String) throws -> [NtfyAction] {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("[") {
            guard case .array(let elements)? = try? JSONValue.decode(Data(trimmed.utf8)) else {
                throw APIError.invalidField("actions", "actions is not a valid JSON array.")
            }
            return try parse(json: elements)
        }
        var objects: [JSONValue] = []
        for definition in split(trimmed, on: ";") where !definition.trimmingCharacters(in: .whitespaces).isEmpty {
            var object: JSONObject = [:]
            var headers: JSONObject = [:]
            let positional = ["action", "label", "url"]
            var position = 0
            for part in split(definition, on: ",") {
                let field = part.trimmingCharacters(in: .whitespaces)
                if let equals = field.firstIndex(of: "="), !field.hasPrefix("http"), position >= 1 || field.hasPrefix("action=") {
                    let key = field[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                    let value = unquote(String(field[field.index(after: equals)...]).trimmingCharacters(in: .whitespaces))
                    if key.hasPrefix("headers.") {
                        headers[String(field[..<equals].trimmingCharacters(in: .whitespaces).dropFirst(8))] = .string(value)
                    } else {
                        object[key] = key == "clear" ? .bool(value.lowercased() == "true") : .string(value)
                    }
                } else if position < positional.count {
                    object[positional[position]] = .string(unquote(field))
                    position += 1
                } else {
                    throw APIError.invalidField("actions", "actions has too many fields in \"\(definition.trimmingCharacters(in: .whitespaces))\".")
                }
            }
            if !headers.isEmpty { object["headers"] = .object(headers) }
            objects.append(.object(object))
        }
        return try parse(json: objects)
    }

    /// ntfy's JSON action objects.
    static func parse(json elements: [JSONValue]) throws -> [NtfyAction] {
        guard elements.count <= maximumCount else {
            throw APIError.invalidField("actions", "actions must hold at most \(maximumCount) buttons, as in ntfy; got \(elements.count).")
        }
        return try elements.enumerated().map { index, element in
            let path = "actions[\(index)]"
            guard case .object(let object) = element else { throw APIError.invalidField(path, "\(path) must be an object.") }
            return try NtfyAction(FieldReader(object, path: path), index: index)
        }
    }

    init(_ fields: FieldReader, index: Int) throws {
        kind = try fields.requiredNonEmptyString("action").lowercased()
        switch kind {
        case "view", "http": break
        case "broadcast":
            throw APIError.invalidField(
                fields.path(of: "action"), "\(fields.path(of: "action")) broadcast (an Android intent) is not supported by Herald; use view or http.")
        default:
            throw APIError.invalidField(fields.path(of: "action"), "\(fields.path(of: "action")) must be view or http; got \"\(kind)\".")
        }
        label = try fields.requiredNonEmptyString("label")
        url = try fields.requiredNonEmptyString("url")
        clear = try fields.optionalBool("clear") ?? false
        method = try fields.optionalString("method")
        body = try fields.optionalString("body")
        var object: JSONObject = ["id": .string("\(kind)-\(index + 1)"), "title": .string(label), "url": .string(url)]
        if kind == "view" {
            object["foreground"] = .bool(ActionButton.scheme(of: url) == "https")
            headers = [:]
        } else {
            object["method"] = .string(method ?? "POST")
            if let headerObject = try fields.optionalObject("headers") { object["headers"] = .object(headerObject.object) }
            object["body"] = body.map(JSONValue.string)
            headers = [:]
        }
        let reader = FieldReader(object, path: fields.path)
        // Herald's rules for a button (length, URL schemes, methods, headers) name ntfy's field.
        do {
            herald = try ActionButton(reader)
        } catch let error as APIError {
            var renamed = error
            renamed.field = error.field.map { $0.replacingOccurrences(of: ".title", with: ".label") }
            renamed.message = error.message.replacingOccurrences(of: ".title", with: ".label")
            throw renamed
        }
        headers = herald.headers
    }

    /// The action as ntfy's published message shows it.
    var json: JSONValue {
        var object: JSONObject = [
            "id": .string(herald.id), "action": .string(kind), "label": .string(label), "url": .string(url), "clear": .bool(clear),
        ]
        if kind == "http" {
            object["method"] = .string(herald.method)
            if !herald.headers.isEmpty { object["headers"] = .object(herald.headers.mapValues(JSONValue.string)) }
            if let body { object["body"] = .string(body) }
        }
        return .object(object)
    }

    /// Splits on `separator` outside single or double quotes.
    private static func split(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
                current.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                current.append(character)
            } else if character == separator {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }

    private static func unquote(_ value: String) -> String {
        guard value.count >= 2, let first = value.first, first == "'" || first == "\"", value.last == first else { return value }
        return String(value.dropFirst().dropLast())
    }
}
