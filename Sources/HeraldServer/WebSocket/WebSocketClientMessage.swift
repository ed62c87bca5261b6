import Foundation
import HeraldCore
import HummingbirdWebSocket

/// A message a client sends on the WebSocket channel (docs/websocket.md), decoded and checked like the HTTP dialects'
/// request types: a subscription or a confirmation. Home Assistant's `mobile_app/`-prefixed types are the same
/// messages.
///
/// ```swift
/// switch try WebSocketClientMessage(frame, isSubscribed: subscription != nil) {
/// case .subscribe(let id, let userID, let secret, let supportsConfirm): ...
/// case .confirm(let id, let confirmID): ...
/// }
/// ```
///
/// The form of the USER_ID is checked with the credentials (``DeviceDirectory``), not here: that check runs inside the
/// failure throttle, so a locked-out client is answered `too_many_auth_failures` whatever USER_ID it sends.
enum WebSocketClientMessage: Equatable {
    /// `push_notification_channel`: subscribe the socket to the device of `userID`/`secret`. `supportsConfirm`
    /// (`support_confirm: true`) asks for a `hass_confirm_id` in each event.
    case subscribe(id: Int, userID: String, secret: String, supportsConfirm: Bool)
    /// `push_notification_confirm`: the event carrying `confirmID` arrived. The `id` is echoed when there is one.
    case confirm(id: Int?, confirmID: String)

    /// Decodes a frame. On a socket without a subscription a confirmation is refused `not_subscribed` before its
    /// fields are looked at.
    init(_ frame: WebSocketMessage, isSubscribed: Bool) throws(WebSocketErrorResult) {
        guard case .text(let text) = frame, let object = try? JSONValue.decode(Data(text.utf8)).objectValue else {
            throw WebSocketErrorResult(id: nil, .invalidFormat)
        }
        let id = object["id"].flatMap { if case .int(let id) = $0 { id } else { nil } }
        switch object["type"]?.stringValue {
        case "push_notification_channel", "mobile_app/push_notification_channel":
            guard let id else { throw WebSocketErrorResult(id: nil, .invalidFormat, "id must be a whole number.") }
            let fields = FieldReader(object)
            guard let userID = try? fields.requiredNonEmptyString("user_id"),
                let secret = try? fields.requiredNonEmptyString("device_secret")
            else { throw WebSocketErrorResult(id: id, .invalidFormat, "user_id and device_secret are required.") }
            let supportsConfirm = (try? fields.optionalBool("support_confirm")) == true
            self = .subscribe(id: id, userID: userID, secret: secret, supportsConfirm: supportsConfirm)
        case "push_notification_confirm", "mobile_app/push_notification_confirm":
            guard isSubscribed else { throw WebSocketErrorResult(id: id, .notSubscribed) }
            guard let confirmID = object["confirm_id"]?.stringValue else {
                throw WebSocketErrorResult(id: id, .invalidFormat, "confirm_id is required.")
            }
            self = .confirm(id: id, confirmID: confirmID)
        default:
            throw WebSocketErrorResult(id: id, .unknownCommand)
        }
    }
}

/// A refused message, answered `{"id", "type": "result", "success": false, "error": {"code", "message"}}` as Home
/// Assistant's WebSocket API answers.
struct WebSocketErrorResult: Error, Equatable {
    /// The `id` of the message refused, when it had one.
    var id: Int?
    var code: ErrorCode
    var message: String

    /// A refusal with `code` and, unless `message` is given, its default sentence.
    init(id: Int?, _ code: ErrorCode, _ message: String? = nil) {
        self.id = id
        self.code = code
        self.message = message ?? code.defaultMessage ?? code.rawValue
    }

    /// The refusal of a subscription's credentials, with the code and sentence the HTTP API would answer.
    init(id: Int, _ error: APIError) {
        self.init(id: id, error.code, error.message)
    }

    var json: JSONValue {
        [
            "id": id.map(JSONValue.int) ?? .null, "type": "result", "success": false,
            "error": ["code": .string(code.rawValue), "message": .string(message)],
        ]
    }
}
