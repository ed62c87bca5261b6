import Foundation
import HeraldCore

/// The JSON forms of answers, events and inbox items (docs/api.md, "Answers" and "The inbox").
enum AnswerJSON {
    /// `{"notification_id", "status": "pending"|"answered", "action_id", "text", "answered_at"}`; the last three `null`
    /// while pending (`text` also when the action took none).
    static func state(of id: PushNotification.ID, _ answer: NotificationAnswer?) -> JSONObject {
        [
            "notification_id": .string(id.lowercasedText), "status": .string(answer == nil ? "pending" : "answered"),
            "action_id": answer.map { .string($0.actionID) } ?? .null, "text": answer?.text.map(JSONValue.string) ?? .null,
            "answered_at": answer.map { .string($0.answeredAt.iso8601WithMilliseconds) } ?? .null,
        ]
    }

    /// `{"action_id", "text", "answered_at"}` or `null`.
    static func answer(_ answer: NotificationAnswer?) -> JSONValue {
        guard let answer else { return .null }
        return [
            "action_id": .string(answer.actionID), "text": answer.text.map(JSONValue.string) ?? .null,
            "answered_at": .string(answer.answeredAt.iso8601WithMilliseconds),
        ]
    }

    /// `[{"event", "at"}]`, in the order reported.
    static func events(_ events: [NotificationEvent]) -> JSONValue {
        .array(events.map { ["event": .string($0.event.rawValue), "at": .string($0.at.iso8601WithMilliseconds)] })
    }

    /// One inbox item: `{"id", "title", "body", "state", "read", "answer", "created_at"}` (`title` and `body` `null`
    /// when the notification has none, e.g. a silent command).
    static func inboxItem(_ entry: InboxEntry) -> JSONObject {
        let notification = entry.notification
        return [
            "id": .string(notification.id.lowercasedText), "title": notification.content?.title.map(JSONValue.string) ?? .null,
            "body": notification.content?.body.map(JSONValue.string) ?? .null, "state": .string(notification.status.rawValue),
            "read": .bool(entry.isRead), "answer": answer(entry.answer),
            "created_at": .string(notification.createdAt.iso8601WithMilliseconds),
        ]
    }

    /// The action of `content` with this id, if it is an answer: no `url`, not `foreground`
    /// (``NotificationAction/isAnswer``).
    static func answerAction(_ actionID: String, of content: NotificationContent?) -> NotificationAction? {
        content?.actions.first { $0.id == actionID && $0.isAnswer }
    }

    /// Whether a notification can be answered: a `POST /notifications` notification with an answer action.
    static func isAnswerable(_ content: NotificationContent?) -> Bool {
        content?.meta["sender_token"] != nil && content?.actions.contains(where: \.isAnswer) == true
    }
}
