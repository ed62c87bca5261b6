import Foundation
import HeraldCore

/// How answers and the inbox treat the repeats of a notification that repeats until acknowledged: each repeat is a
/// notification of its own (its own id, the same content and collapse id) marked `repeat_of` in its
/// ``NotificationContent/meta``.
enum ReceiptAnswers {
    /// The notification whose answer an answer to `notification` is: the first notification of a repeat while it is
    /// kept, otherwise `notification` itself.
    static func answered(_ notification: PushNotification, store: any NotificationStore) async throws -> PushNotification.ID {
        guard let first = repeatOf(notification), try await store.notification(id: first) != nil else { return notification.id }
        return first
    }

    static func repeatOf(_ notification: PushNotification) -> PushNotification.ID? {
        notification.content?.meta["repeat_of"]?.stringValue.flatMap(UUID.init(uuidString:))
    }

    static func isRepeat(_ notification: PushNotification) -> Bool { repeatOf(notification) != nil }
}
