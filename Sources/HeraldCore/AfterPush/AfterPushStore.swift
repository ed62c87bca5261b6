import Foundation

/// The person's answer to an answerable notification: the action tapped (one without a `url` that does not bring the
/// app to the foreground) and what was typed into it, when the action takes text (`text_input`).
public struct NotificationAnswer: Sendable, Equatable {
    public var notificationID: PushNotification.ID
    public var actionID: String
    public var text: String?
    public var answeredAt: Date

    public init(notificationID: PushNotification.ID, actionID: String, text: String?, answeredAt: Date) {
        self.notificationID = notificationID
        self.actionID = actionID
        self.text = text
        self.answeredAt = answeredAt
    }
}

/// What the app reports of a notification on the phone.
public enum AppEvent: String, Sendable, Equatable, CaseIterable {
    case delivered
    case opened
    case dismissed
    case read
}

/// One thing the app reported, and when Herald heard of it.
public struct NotificationEvent: Sendable, Equatable {
    public var event: AppEvent
    public var at: Date

    public init(event: AppEvent, at: Date) {
        self.event = event
        self.at = at
    }
}

/// What ``AfterPushStore/recordAnswer(_:)`` did: the first answer wins.
public enum AnswerRecording: Sendable, Equatable {
    /// This answer is the notification's answer now.
    case recorded
    /// The notification had been answered before; its answer stays.
    case alreadyAnswered(NotificationAnswer)
}

/// One notification of a device's inbox: the notification, its answer and whether the app reported it read.
public struct InboxEntry: Sendable, Equatable {
    /// Where the notification stands in the order notifications were accepted in (SQLite's `rowid`, PostgreSQL's
    /// `inbox_seq`): the page after it starts after this.
    public var cursor: Int64
    public var notification: PushNotification
    public var answer: NotificationAnswer?
    public var isRead: Bool

    public init(cursor: Int64, notification: PushNotification, answer: NotificationAnswer?, isRead: Bool) {
        self.cursor = cursor
        self.notification = notification
        self.answer = answer
        self.isRead = isRead
    }
}

/// What happens after the push (issue 39): answers, the app's events and the inbox.
///
/// Answers and events belong to their notification: deleting the notification (its device removed, retention)
/// deletes them (`ON DELETE CASCADE` in SQLite and PostgreSQL). At most one event of each kind is kept per
/// notification, the first reported, so a notification has at most four.
///
/// ```swift
/// switch try await store.recordAnswer(NotificationAnswer(notificationID: id, actionID: "ack", text: nil, answeredAt: now)) {
/// case .recorded: wake the waiters
/// case .alreadyAnswered(let first): 409 with `first`
/// }
/// ```
public protocol AfterPushStore: Sendable {
    /// Stores `answer` unless the notification has one already. The notification must exist.
    func recordAnswer(_ answer: NotificationAnswer) async throws -> AnswerRecording
    /// The answers of those of `ids` that have one.
    func answers(of ids: [PushNotification.ID]) async throws -> [PushNotification.ID: NotificationAnswer]
    /// Stores `event` unless the notification has an event of that kind already. The notification must exist.
    func recordEvent(_ event: NotificationEvent, of id: PushNotification.ID) async throws
    /// The notification's events, in the order they were reported (by time, then kind).
    func events(of id: PushNotification.ID) async throws -> [NotificationEvent]
    /// The alert notifications of one device (Live Activity and background pushes left out) in the order they were
    /// accepted, starting after the entry whose ``InboxEntry/cursor`` is `after`, at most `limit`.
    func inbox(deviceID: Device.ID, after: Int64?, limit: Int) async throws -> [InboxEntry]
}
