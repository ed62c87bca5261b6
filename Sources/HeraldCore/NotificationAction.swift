import Foundation

/// One button of a notification, as its dialect validated it and as Herald's apps (and a browser's service worker)
/// receive it in the payload's `actions` (docs/payloads.md).
///
/// The members say what the dialect said, no more: a member left `nil` (or `headers` empty) is left out of the payload,
/// and the app's default applies (no `url`, `GET`, not foreground, not destructive, no authentication, no text field).
/// `POST /notifications` (and ntfy's buttons, through its rules) fills in every flag and the method, so its apps always
/// see them; Home Assistant's buttons for a browser carry `id`, `title` and `url` alone.
///
/// ```swift
/// let action = NotificationAction(id: "open", title: "Open", url: "https://ha.local/lock", method: .post, foreground: false)
/// action.json  // ["id": "open", "title": "Open", "url": "https://ha.local/lock", "method": "POST", "foreground": false]
/// ```
///
/// ``json`` is both the payload's form and the stored form (`notification.content.actions`), the same JSON Herald kept
/// when actions were loose objects, so rows written before read back unchanged (``init(json:)``).
public struct NotificationAction: Sendable, Equatable {
    /// The HTTP method of a request the app makes on the tap (to ``url``).
    public enum Method: String, Sendable, CaseIterable {
        case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE", head = "HEAD"
    }

    /// The text field a tap opens; what the person types goes with the tap (PushWard's reply-with-text).
    public struct TextInput: Sendable, Equatable {
        /// The field's placeholder (`text_input_placeholder`).
        public var placeholder: String?
        /// The send button's title (`text_input_button_title`).
        public var buttonTitle: String?

        public init(placeholder: String? = nil, buttonTitle: String? = nil) {
            self.placeholder = placeholder
            self.buttonTitle = buttonTitle
        }
    }

    /// Unique among the notification's actions; what the app reports when it is tapped (an answer's `action_id`).
    public var id: String
    /// The button's label.
    public var title: String
    /// An SF Symbol name shown beside the title.
    public var icon: String?
    /// What the tap opens (``foreground``) or calls in the background (with ``method``, ``headers``, ``body``).
    public var url: String?
    public var method: Method?
    /// Header names and values of the request; empty: none.
    public var headers: [String: String]
    /// The request's body.
    public var body: String?
    /// The tap brings the app to the foreground (and opens ``url`` there).
    public var foreground: Bool?
    /// The button is shown as destructive.
    public var destructive: Bool?
    /// The device must be unlocked to perform it.
    public var authenticationRequired: Bool?
    /// The tap opens a text field first.
    public var textInput: TextInput?

    public init(
        id: String, title: String, icon: String? = nil, url: String? = nil, method: Method? = nil, headers: [String: String] = [:],
        body: String? = nil, foreground: Bool? = nil, destructive: Bool? = nil, authenticationRequired: Bool? = nil,
        textInput: TextInput? = nil
    ) {
        self.id = id
        self.title = title
        self.icon = icon
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.foreground = foreground
        self.destructive = destructive
        self.authenticationRequired = authenticationRequired
        self.textInput = textInput
    }

    /// Whether tapping it is an answer the app reports to Herald (docs/api.md, "Answers"): no ``url`` to open or call,
    /// and the app stays in the background.
    public var isAnswer: Bool { url == nil && foreground != true }
}

// MARK: Payload and stored form

extension NotificationAction {
    /// The action as the app receives it and as the store keeps it: `id`, `title`, and each member the action says
    /// (`icon`, `url`, `method`, `headers`, `body`, `foreground`, `destructive`, `authentication_required`, and with a
    /// text field `text_input: true`, `text_input_placeholder`, `text_input_button_title`).
    public var json: JSONObject {
        var object: JSONObject = ["id": .string(id), "title": .string(title)]
        object["icon"] = icon.map(JSONValue.string)
        object["url"] = url.map(JSONValue.string)
        object["method"] = method.map { .string($0.rawValue) }
        if !headers.isEmpty { object["headers"] = .object(headers.mapValues(JSONValue.string)) }
        object["body"] = body.map(JSONValue.string)
        object["foreground"] = foreground.map(JSONValue.bool)
        object["destructive"] = destructive.map(JSONValue.bool)
        object["authentication_required"] = authenticationRequired.map(JSONValue.bool)
        if let textInput {
            object["text_input"] = true
            object["text_input_placeholder"] = textInput.placeholder.map(JSONValue.string)
            object["text_input_button_title"] = textInput.buttonTitle.map(JSONValue.string)
        }
        return object
    }

    /// Reads what ``json`` wrote (and what Herald stored before actions were typed: the same members); `nil` without a
    /// string `id` and `title`, or with a member of the wrong type or a method Herald does not know (a row that no
    /// Herald wrote). Unknown members are ignored, so that a newer Herald's rows stay readable.
    public init?(json: JSONObject) {
        guard case .string(let id)? = json["id"], case .string(let title)? = json["title"] else { return nil }
        func string(_ key: String) -> String?? {
            switch json[key] {
            case nil, .null?: .some(nil)
            case .string(let value)?: .some(value)
            default: nil
            }
        }
        func flag(_ key: String) -> Bool?? {
            switch json[key] {
            case nil, .null?: .some(nil)
            case .bool(let value)?: .some(value)
            default: nil
            }
        }
        guard let icon = string("icon"), let url = string("url"), let methodName = string("method"), let body = string("body"),
            let foreground = flag("foreground"), let destructive = flag("destructive"),
            let authenticationRequired = flag("authentication_required"), let textInput = flag("text_input"),
            let placeholder = string("text_input_placeholder"), let buttonTitle = string("text_input_button_title")
        else { return nil }
        var method: Method?
        if let methodName {
            guard let known = Method(rawValue: methodName) else { return nil }
            method = known
        }
        var headers: [String: String] = [:]
        switch json["headers"] {
        case nil, .null?: break
        case .object(let object)?:
            for (name, value) in object {
                guard case .string(let text) = value else { return nil }
                headers[name] = text
            }
        default: return nil
        }
        self.init(
            id: id, title: title, icon: icon, url: url, method: method, headers: headers, body: body, foreground: foreground,
            destructive: destructive, authenticationRequired: authenticationRequired,
            textInput: textInput == true ? TextInput(placeholder: placeholder, buttonTitle: buttonTitle) : nil)
    }
}
