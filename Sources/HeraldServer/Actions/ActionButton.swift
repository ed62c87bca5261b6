import Foundation
import HeraldCore

/// One button of a `POST /notifications` notification (PushWard's `NotificationAction`, `additionalProperties: false`),
/// validated into HeraldCore's typed ``NotificationAction`` with the defaults filled in: the method (`GET`) and every
/// flag (`false`) are always set, so the app receives them all in the payload's top-level `actions` array (documented
/// in docs/payloads.md). ntfy's buttons are held to the same rules (``NtfyAction``).
struct ActionButton: Equatable {
    static let maximumCount = 10
    static let maximumIDLength = 64
    static let maximumTitleLength = 64
    static let maximumIconLength = 100
    static let maximumURLLength = 2048
    /// The limit of `headers` (names plus values, UTF-8 bytes) and of `body` (UTF-8 bytes).
    static let maximumHeadersBytes = 1024
    static let maximumBodyBytes = 1024
    static let methods = NotificationAction.Method.allCases.map(\.rawValue)
    static let forbiddenSchemes: Set<String> = ["javascript", "data", "file"]

    /// Every member an action takes (PushWard's `NotificationAction`, `additionalProperties: false`).
    static let members: Set<String> = [
        "id", "title", "icon", "url", "method", "headers", "body", "foreground", "destructive", "authentication_required",
        "text_input", "text_input_placeholder", "text_input_button_title",
    ]
    static let maximumTextInputLabelLength = 64

    /// The button as the draft carries it; `headers` with `Content-Type: application/json` added when there is a body
    /// and the sender gave no Content-Type.
    let action: NotificationAction

    var id: String { action.id }
    var url: String? { action.url }
    var method: String { (action.method ?? .get).rawValue }
    var headers: [String: String] { action.headers }
    var foreground: Bool { action.foreground ?? false }

    /// Whether tapping it is an answer the app reports to Herald (docs/api.md, "Answers"): no `url` to open or call,
    /// and the app stays in the background.
    var isAnswer: Bool { action.isAnswer }

    /// Decodes and validates one element of `actions`; errors name the field, e.g. `actions[2].url`.
    init(_ fields: FieldReader) throws {
        try fields.refuseUnknownMembers(allowed: Self.members)
        let id = try fields.requiredNonEmptyString("id")
        try Self.checkLength(id, of: fields.path(of: "id"), maximum: Self.maximumIDLength)
        let title = try fields.requiredNonEmptyString("title")
        try Self.checkLength(title, of: fields.path(of: "title"), maximum: Self.maximumTitleLength)

        let icon = try fields.optionalString("icon")
        if let icon, !Self.isSymbolName(icon) {
            let field = fields.path(of: "icon")
            throw APIError.invalidField(
                field,
                "\(field) must be an SF Symbol name such as checkmark.circle "
                    + "(letters, digits and dots, at most \(Self.maximumIconLength) characters).")
        }

        let foreground = try fields.optionalBool("foreground") ?? false
        let destructive = try fields.optionalBool("destructive") ?? false
        let authenticationRequired = try fields.optionalBool("authentication_required") ?? false

        let url = try fields.optionalString("url").map { try Self.validURL($0, field: fields.path(of: "url")) }
        if foreground, let url, Self.scheme(of: url) != "https" {
            let field = fields.path(of: "url")
            throw APIError.invalidField(
                field,
                "\(field) must be an https:// URL when \(fields.path(of: "foreground")) is true; "
                    + "use foreground: false for other schemes.")
        }

        let methodName = try fields.optionalString("method")
        var method = NotificationAction.Method.get
        if let methodName {
            guard let named = NotificationAction.Method(rawValue: methodName.uppercased()) else {
                let field = fields.path(of: "method")
                throw APIError.invalidField(field, "\(field) must be one of \(Self.methods.joined(separator: ", ")); got \"\(methodName)\".")
            }
            method = named
        }

        var headers = try Self.validHeaders(fields)
        let body = try fields.optionalString("body")
        if let body, body.utf8.count > Self.maximumBodyBytes {
            let field = fields.path(of: "body")
            throw APIError.invalidField(field, "\(field) must be at most \(Self.maximumBodyBytes) bytes; got \(body.utf8.count).")
        }
        if body != nil, !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            headers["Content-Type"] = "application/json"
        }
        let textInput = try fields.optionalBool("text_input") ?? false
        let placeholder = try fields.optionalString("text_input_placeholder")
        let buttonTitle = try fields.optionalString("text_input_button_title")
        try Self.checkTextInput(fields, textInput: textInput, labels: [placeholder, buttonTitle], foreground: foreground, url: url)
        action = NotificationAction(
            id: id, title: title, icon: icon, url: url, method: method, headers: headers, body: body, foreground: foreground,
            destructive: destructive, authenticationRequired: authenticationRequired,
            textInput: textInput ? NotificationAction.TextInput(placeholder: placeholder, buttonTitle: buttonTitle) : nil)
    }

    /// `text_input` needs an action that stays in the background and either is an answer (no `url`) or calls an
    /// `http(s)` URL; its placeholder and button title (at most 64 characters) need `text_input`.
    private static func checkTextInput(_ fields: FieldReader, textInput: Bool, labels: [String?], foreground: Bool, url: String?) throws {
        for (key, label) in zip(["text_input_placeholder", "text_input_button_title"], labels) {
            guard let label else { continue }
            let field = fields.path(of: key)
            guard textInput else { throw APIError.invalidField(field, "\(field) needs \(fields.path(of: "text_input")): true.") }
            try Self.checkLength(label, of: field, maximum: Self.maximumTextInputLabelLength)
        }
        guard textInput else { return }
        let field = fields.path(of: "text_input")
        if foreground {
            throw APIError.invalidField(field, "\(field) needs an action that stays in the background (foreground: false).")
        }
        if let url, !["http", "https"].contains(Self.scheme(of: url) ?? "") {
            throw APIError.invalidField(field, "\(field) needs an action without a url (an answer) or with an http(s) url.")
        }
    }

    // MARK: Rules

    private static func checkLength(_ value: String, of field: String, maximum: Int) throws {
        guard value.count <= maximum else {
            throw APIError.invalidField(field, "\(field) must be at most \(maximum) characters; got \(value.count).")
        }
    }

    /// `checkmark.circle`, `arrow.up.right.square`: dot-separated runs of ASCII letters and digits.
    static func isSymbolName(_ name: String) -> Bool {
        guard name.utf8.count <= maximumIconLength else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
        }
    }

    /// A URL an action (or a tap) may open: trimmed, at most 2048 characters, absolute, no white space or control
    /// characters inside, and not `javascript:`, `data:` or `file:` (schemes compared case-insensitively).
    static func validURL(_ raw: String, field: String) throws -> String {
        let url = raw.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(.controlCharacters))
        guard url.count <= maximumURLLength else {
            throw APIError.invalidField(field, "\(field) must be at most \(maximumURLLength) characters; got \(url.count).")
        }
        guard !url.unicodeScalars.contains(where: { CharacterSet.whitespacesAndNewlines.union(.controlCharacters).contains($0) })
        else {
            throw APIError.invalidField(field, "\(field) must not contain spaces or control characters (percent-encode them).")
        }
        guard let scheme = scheme(of: url) else {
            throw APIError.invalidField(field, "\(field) must be an absolute URL with a scheme, such as https://… or homeassistant://….")
        }
        guard !forbiddenSchemes.contains(scheme) else {
            throw APIError.invalidField(field, "\(field) must not be a \(scheme): URL (javascript:, data: and file: are refused).")
        }
        guard let parsed = URL(string: url) else {
            throw APIError.invalidField(field, "\(field) is not a valid URL.")
        }
        if scheme == "http" || scheme == "https", parsed.host?.isEmpty ?? true {
            throw APIError.invalidField(field, "\(field) must name a host.")
        }
        return url
    }

    /// The lowercased scheme of an absolute URL (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`), or `nil`.
    static func scheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":") else { return nil }
        let scheme = url[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first),
            scheme.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0)) })
        else { return nil }
        return scheme.lowercased()
    }

    /// `headers`: an object of strings with valid header names and no line breaks in values, names plus values at
    /// most 1024 bytes in UTF-8.
    private static func validHeaders(_ fields: FieldReader) throws -> [String: String] {
        guard let headers = try fields.optionalObject("headers") else { return [:] }
        var result: [String: String] = [:]
        var total = 0
        for name in headers.object.keys.sorted() {
            let field = headers.path(of: name)
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenCharacter) else {
                throw APIError.invalidField(headers.path, "\(headers.path) has an invalid header name \"\(name)\".")
            }
            guard case .string(let value) = headers.object[name] else {
                throw APIError.invalidField(field, "\(field) must be a string.")
            }
            guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7f }) else {
                throw APIError.invalidField(field, "\(field) must not contain line breaks or control characters.")
            }
            guard !result.keys.contains(where: { $0.lowercased() == name.lowercased() }) else {
                throw APIError.invalidField(field, "\(field) repeats a header name (header names are case-insensitive).")
            }
            total += name.utf8.count + value.utf8.count
            result[name] = value
        }
        guard total <= maximumHeadersBytes else {
            throw APIError.invalidField(
                headers.path, "\(headers.path) must total at most \(maximumHeadersBytes) bytes (names plus values); got \(total).")
        }
        return result
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
