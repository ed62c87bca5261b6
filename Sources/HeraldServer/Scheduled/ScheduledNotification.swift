import Foundation
import HeraldCore

/// What a scheduled send sends, as its row keeps it (``ScheduledSend/notification``): the body of a `POST /notifications`
/// (`POST /notifications/scheduled`), parsed again when it goes out, or a sender dialect's draft (ntfy's `delay`),
/// kept as `{"herald_draft": …}`. `POST /notifications` refuses that member, so the two forms never meet.
enum ScheduledNotification {
    case actionNotification(JSONObject)
    case draft(NotificationDraft)

    static let draftKey = "herald_draft"

    init(stored: Data) throws {
        guard let object = try JSONValue.decode(stored).objectValue else {
            throw APIError.invalidField("notification", "A scheduled send's notification is not a JSON object.")
        }
        if let draft = object[Self.draftKey]?.objectValue {
            guard let parsed = NotificationDraft(storedJSON: draft) else {
                throw APIError.invalidField("notification", "A scheduled send's draft is not one Herald wrote.")
            }
            self = .draft(parsed)
        } else {
            self = .actionNotification(object)
        }
    }

    func encoded() throws -> Data {
        switch self {
        case .actionNotification(let body): try JSONValue.object(body).encoded()
        case .draft(let draft): try JSONValue.object([Self.draftKey: .object(draft.storedJSON)]).encoded()
        }
    }

    /// The token of a scheduled send a sender dialect made (ntfy's `delay`): no API token made it, so no token lists or
    /// cancels it (`GET /notifications/scheduled` shows a token only its own).
    static let noToken = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// The draft to send now, and whether to push it (`push: false` keeps it in the inbox only). A `POST /notifications`
    /// body is parsed by its own rules again and carries its token as `POST /notifications` does (`sender_token`), so
    /// that the token reads its answers and gets its outcome callbacks.
    func prepared(tokenID: UUID) throws -> (draft: NotificationDraft, pushes: Bool) {
        switch self {
        case .actionNotification(let body):
            let request = try ActionNotificationRequest(body)
            var draft = request.draft
            if tokenID != Self.noToken { draft.content.meta[CallbackOutbox.senderTokenKey] = .string(tokenID.lowercasedText) }
            return (draft, request.pushWard.push)
        case .draft(let draft):
            return (draft, true)
        }
    }
}
