import Foundation
import HTTPTypes
import HeraldCore

/// Sender dialects' delayed sends (ntfy's `delay`, `at`, `in`) as Herald's scheduled sends (issue 39, section 5): the
/// draft is stored now (durable before the answer) and the ``ScheduledSendDispatcher`` sends it when it is due, counted
/// against the daily limit then, as every scheduled send is.
struct SenderScheduling: Sendable {
    let store: any ScheduledSendStore
    let dispatcher: ScheduledSendDispatcher
}

extension SenderDelivery {
    /// Stores `draft` to be sent to `device` at `sendAt`: the scheduled send, or a 409 when the device already has as many
    /// scheduled sends as it may (``ScheduledSendRequest/maximumPendingPerDevice``).
    func schedule(_ draft: NotificationDraft, to device: Device, at sendAt: Date, field: String) async throws -> ScheduledSend {
        guard let scheduling else {
            throw APIError.invalidField(field, "This server does not schedule sends: send the message when it is due.")
        }
        let send = ScheduledSend(
            deviceID: device.id, tokenID: ScheduledNotification.noToken, notification: try ScheduledNotification.draft(draft).encoded(),
            sendAt: sendAt, nextAt: sendAt, createdAt: clock.now())
        try await ScheduledSendRequest.insert(send, into: scheduling.store)
        scheduling.dispatcher.wake()
        return send
    }
}
