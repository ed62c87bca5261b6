import Foundation
import HeraldCore
import Hummingbird

/// What the app reports and reads with the device's own credentials (`Authorization: Basic user_id:device_secret`;
/// docs/api.md, "Answers", "What the app reports" and "The inbox"):
///
/// - `POST /api/push/notifications/{id}/answer` `{"action_id", "text"?}` → 204: the person tapped an answer action
///   (no `url`, not `foreground`); the first answer wins, a later one is 409 `already_answered` with the first.
/// - `POST /api/push/notifications/{id}/events` `{"event": "delivered"|"opened"|"dismissed"|"read"}` → 204; the
///   first report of each kind is kept, a repeat is a 204 that changes nothing.
/// - `GET /api/push/inbox?after=<cursor>&limit=<n>` → `{"items", "next_cursor"}`, oldest first.
///
/// A notification of another device, or none, is 404.
struct DeviceReportsController<Context: RemoteAddressRequestContext>: Sendable {
    static var maximumTextLength: Int { 4096 }
    static var defaultInboxLimit: Int { 50 }
    static var maximumInboxLimit: Int { 100 }

    let store: any AfterPushStore & NotificationStore
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let waiters: AnswerWaiters
    let clock: any WallClock
    let bodyLimit: Int
    /// Acknowledges the receipt of a notification that repeats until acknowledged (Receipts/).
    var receipts: ReceiptDispatcher? = nil
    /// Told of each answer once it is recorded (the sending token's outcome callback, Callbacks/).
    var answered: (@Sendable (PushNotification, NotificationAnswer) async -> Void)?

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("notifications/{id}/answer", use: answer)
        group.post("notifications/{id}/events", use: event)
        group.get("inbox", use: inbox)
    }

    @Sendable func answer(_ request: Request, context: Context) async throws -> Response {
        let notification = try await ownNotification(request, context)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        try fields.refuseUnknownMembers(allowed: ["action_id", "text"])
        let actionID = try fields.requiredNonEmptyString("action_id")
        guard let action = AnswerJSON.answerAction(actionID, of: notification.content) else {
            throw APIError.invalidField(
                "action_id", "action_id must name an action of this notification without a url that does not open the app.")
        }
        let text = try fields.optionalString("text")
        if let text {
            guard action.textInput != nil else {
                throw APIError.invalidField("text", "text is for an action with text_input; \"\(actionID)\" takes none.")
            }
            guard text.count <= Self.maximumTextLength else {
                throw APIError.invalidField("text", "text must be at most \(Self.maximumTextLength) characters; got \(text.count).")
            }
        }
        // A repeat's answer is the first notification's (while it is kept): the first answer to any of them wins.
        let answered = try await storeCall { try await ReceiptAnswers.answered(notification, store: store) }
        let answer = NotificationAnswer(notificationID: answered, actionID: actionID, text: text, answeredAt: clock.now())
        switch try await storeCall({ try await store.recordAnswer(answer) }) {
        case .recorded:
            waiters.answered(answered)
            await self.answered?(notification, answer)
            if let receipts {
                try await storeCall { try await receipts.acknowledge(notification, actionID: actionID, by: notification.deviceID) }
            }
            return Response(status: .noContent)
        case .alreadyAnswered(let first):
            throw APIError(
                .alreadyAnswered, message: "This notification was answered before; the first answer stays.",
                extra: ["answer": AnswerJSON.answer(first)])
        }
    }

    @Sendable func event(_ request: Request, context: Context) async throws -> Response {
        let notification = try await ownNotification(request, context)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        try fields.refuseUnknownMembers(allowed: ["event"])
        guard let name = try fields.optionalChoice("event", from: AppEvent.allCases.map(\.rawValue)), let event = AppEvent(rawValue: name)
        else { throw APIError.invalidField("event", "event is required: delivered, opened, dismissed or read.") }
        try await storeCall { try await store.recordEvent(NotificationEvent(event: event, at: clock.now()), of: notification.id) }
        return Response(status: .noContent)
    }

    @Sendable func inbox(_ request: Request, context: Context) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try Self.limit(query["limit"].map(String.init))
        var after: Int64?
        if let cursor = query["after"].map(String.init), !cursor.isEmpty {
            guard let position = Int64(cursor), position >= 0 else {
                throw APIError.invalidField("after", "after must be the next_cursor of an earlier page.")
            }
            after = position
        }
        let device = try await owner(request, context)
        let entries = try await storeCall { try await store.inbox(deviceID: device.id, after: after, limit: limit) }
        // The cursor is an opaque string to the app (today the position of the page's last notification).
        let next: JSONValue = entries.count == limit ? entries.last.map { .string(String($0.cursor)) } ?? .null : .null
        // A repeat of a notification that repeats until acknowledged is not a notification of its own (a page may then
        // hold fewer than `limit`; `next_cursor` still says whether more follow).
        let shown = entries.filter { !ReceiptAnswers.isRepeat($0.notification) }
        return JSONResponse.make(
            status: .ok, body: ["items": .array(shown.map { .object(AnswerJSON.inboxItem($0)) }), "next_cursor": next])
    }

    /// `limit`: absent for ``defaultInboxLimit``, else a whole number from 1 to ``maximumInboxLimit``.
    static func limit(_ given: String?) throws -> Int {
        guard let given else { return defaultInboxLimit }
        guard let limit = Int(given), (1...maximumInboxLimit).contains(limit) else {
            throw APIError.invalidField("limit", "limit must be a whole number from 1 to \(maximumInboxLimit); got \"\(given)\".")
        }
        return limit
    }

    private func owner(_ request: Request, _ context: Context) async throws -> Device {
        try await credentials.check(.basic(of: request), of: request, context: context) { try await directory.owner(of: request) }
    }

    /// The device's notification named by the path; 404 for any other.
    private func ownNotification(_ request: Request, _ context: Context) async throws -> PushNotification {
        let device = try await owner(request, context)
        let notFound = APIError.notFound("This device has no notification with this id.")
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw notFound }
        guard let notification = try await storeCall({ try await store.notification(id: id) }), notification.deviceID == device.id
        else { throw notFound }
        return notification
    }
}
