import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import Hummingbird

extension ErrorShape {
    /// Gotify's error body: `{"error": "Bad Request", "errorCode": 400, "errorDescription": "…"}`.
    static let gotify = ErrorShape(name: "gotify") { error in
        [
            "error": .string(error.status.reasonPhrase), "errorCode": .int(error.status.code),
            "errorDescription": .string(error.message),
        ]
    }
}

/// Gotify's message API (docs/senders.md, "Gotify"): `POST /message` with a Herald API token (`hrd_…`, the
/// `notifications` scope) as Gotify's application token: `X-Gotify-Key`, `?token=` or `Authorization: Bearer`. The
/// message goes to the token's device. Answers are Gotify's: 200 with the message, errors in Gotify's shape.
struct GotifyController<Context: RemoteAddressRequestContext>: Sendable {
    let senders: SenderDelivery

    func addRoutes(to router: some RouterMethods<Context>) {
        router.group("message").add(middleware: ErrorShapeMiddleware(.gotify)).post(use: message)
    }

    @Sendable func message(_ request: Request, context: Context) async throws -> Response {
        let input = try await SenderRequest.read(request, limit: senders.bodyLimit)
        let token = input.header("X-Gotify-Key") ?? input.query["token"] ?? Credentials.bearer(request)
        let device: Device
        do {
            device = try await senders.device(apiToken: token, request: request, context: context)
        } catch var error as APIError where error.code == .tokenRequired {
            error.message = "Gotify's application token is a Herald API token (hrd_…, POST /api/push/tokens): give it as X-Gotify-Key, ?token= or Authorization: Bearer."
            throw error
        }
        let message: GotifyMessage
        if let json = input.jsonObject {
            message = try GotifyMessage(json: json)
        } else if let form = input.form {
            message = try GotifyMessage(form: form)
        } else {
            throw APIError.malformedJSON("POST /message takes a JSON object or a form with message, title and priority")
        }
        let receipt = try await senders.send(message.draft, to: device)
        let notification = receipt.notification
        var body: JSONObject = [
            // Gotify's ids are numbers: the first 48 bits of Herald's notification id (herald_id has it whole).
            "id": .int(Self.numericID(notification.id)), "appid": 1, "message": .string(message.message),
            "title": .string(message.title ?? ""), "priority": .int(message.priority),
            "date": .string(notification.createdAt.iso8601WithMilliseconds), "extras": .object(message.extras),
            "herald_id": .string(notification.id.lowercasedText), "herald_status": .string(receipt.statusWord),
        ]
        if let warning = receipt.warning { body["herald_warning"] = .string(warning) }
        return JSONResponse.make(status: .ok, body: body, headers: SendAnswers.headers(receipt.quota, now: notification.createdAt))
    }

    static func numericID(_ id: UUID) -> Int {
        let bytes = id.uuid
        return [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(0) { $0 << 8 | Int($1) }
    }
}

/// One Gotify message: `message` (required), `title`, `priority` 0–10 (0–3 passive, 4–7 active, 8–10 time-sensitive;
/// 5 when not given, Gotify's usual default), `extras` with `client::notification` (`click.url`, `bigImageUrl`).
struct GotifyMessage {
    var message: String
    var title: String?
    var priority: Int
    var extras: JSONObject
    var click: String?
    var bigImage: String?

    init(json: JSONObject) throws {
        let fields = FieldReader(json)
        message = try fields.requiredNonEmptyString("message")
        title = try SenderTextRule.title(fields.optionalString("title"), field: "title")
        switch fields.value("priority") {
        case nil: priority = 5
        case .int(let value)?: priority = try Self.priority(value)
        case .double(let value)? where value.isFinite && value.rounded() == value && abs(value) < 1_000:
            priority = try Self.priority(Int(value))
        default: throw Self.invalidPriority
        }
        let extras = try fields.optionalObject("extras", emptyStringIsAbsent: false)
        self.extras = extras?.object ?? [:]
        let notification = try extras?.optionalObject("client::notification")
        click = try notification?.optionalObject("click")?.optionalString("url").map {
            try SenderURLRule.tap($0, field: "extras.client::notification.click.url")
        }
        bigImage = try notification?.optionalString("bigImageUrl").map {
            try SenderURLRule.image($0, field: "extras.client::notification.bigImageUrl")
        }
    }

    /// A urlencoded or multipart form: `message`, `title`, `priority` (extras only travel in JSON).
    init(form: [String: String]) throws {
        var json: JSONObject = [:]
        for name in ["message", "title"] { json[name] = form[name].map(JSONValue.string) }
        if let priority = form["priority"], !priority.isEmpty {
            guard let value = Int(priority) else { throw Self.invalidPriority }
            json["priority"] = .int(value)
        }
        try self.init(json: json)
    }

    static let invalidPriority = APIError.invalidField("priority", "priority must be a whole number from 0 to 10.")

    static func priority(_ value: Int) throws -> Int {
        guard (0...10).contains(value) else { throw invalidPriority }
        return value
    }

    static func level(priority: Int) -> NotificationContent.Level {
        switch priority {
        case ...3: .passive
        case 4...7: .active
        default: .timeSensitive
        }
    }

    var draft: NotificationDraft {
        let level = Self.level(priority: priority)
        var data: JSONObject = ["gotify_priority": .int(priority)]
        data["url"] = click.map(JSONValue.string)
        data["image_url"] = bigImage.map(JSONValue.string)
        let content = NotificationContent(
            title: title, body: message, sound: level == .passive ? nil : .default, level: level, imageURL: bigImage,
            hasMedia: bigImage != nil, tapURL: click, data: data)
        return NotificationDraft(pushType: .alert, priority: .alert(at: level), content: content)
    }
}
