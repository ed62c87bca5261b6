import Foundation
import HeraldCore

/// Answers, the app's events and the inbox in memory (``AfterPushStore``).
extension InMemoryStore {
    public func recordAnswer(_ answer: NotificationAnswer) async throws -> AnswerRecording {
        guard notifications[answer.notificationID] != nil else { throw StoreError.notFound("notification") }
        if let first = answerRows[answer.notificationID] { return .alreadyAnswered(first) }
        answerRows[answer.notificationID] = answer
        return .recorded
    }

    public func answers(of ids: [PushNotification.ID]) async throws -> [PushNotification.ID: NotificationAnswer] {
        var answers: [PushNotification.ID: NotificationAnswer] = [:]
        for id in ids where notifications[id] != nil { answers[id] = answerRows[id] }
        return answers
    }

    public func recordEvent(_ event: NotificationEvent, of id: PushNotification.ID) async throws {
        guard notifications[id] != nil else { throw StoreError.notFound("notification") }
        var events = eventRows[id] ?? []
        guard !events.contains(where: { $0.event == event.event }) else { return }
        events.append(event)
        eventRows[id] = events
    }

    public func events(of id: PushNotification.ID) async throws -> [NotificationEvent] {
        guard notifications[id] != nil else { return [] }
        return (eventRows[id] ?? []).sorted { ($0.at, $0.event.rawValue) < ($1.at, $1.event.rawValue) }
    }

    public func inbox(deviceID: Device.ID, after: Int64?, limit: Int) async throws -> [InboxEntry] {
        let start = after ?? 0
        return notifications.values
            .filter { $0.deviceID == deviceID && $0.pushType == .alert && (inboxSequence[$0.id] ?? 0) > start }
            .sorted { (inboxSequence[$0.id] ?? 0) < (inboxSequence[$1.id] ?? 0) }
            .prefix(max(0, limit))
            .map { notification in
                InboxEntry(
                    cursor: inboxSequence[notification.id] ?? 0, notification: notification, answer: answerRows[notification.id],
                    isRead: eventRows[notification.id]?.contains { $0.event == .read } ?? false)
            }
    }
}
