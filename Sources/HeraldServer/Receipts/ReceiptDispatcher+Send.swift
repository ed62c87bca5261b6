import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

extension ReceiptDispatcher {
    /// `POST /notifications` with `acknowledge`: the receipt is stored first (the device's 25 active receipts checked in
    /// the same transaction; 409 `notification_receipt.limit_exceeded` beyond), then the notification is sent under the
    /// receipt's collapse id, then the receipt is activated with the notification's id, which ends the token's older
    /// receipts with the same `collapse_id` as `replaced`. A send that fails deletes its receipt; a crash between leaves
    /// one that the repeats cancel (`not_sent`) after ``ReceiptRules/unsentGrace``.
    func sendAcknowledged(
        _ request: ActionNotificationRequest, draft given: NotificationDraft, acknowledge: AcknowledgeRequest, to device: Device, token: UUID
    ) async throws -> Response {
        let now = clock.now()
        let id = UUID()
        var draft = given
        let collapseID = given.collapseID ?? ReceiptRules.derivedCollapseID(receiptID: id)
        draft.collapseID = collapseID
        // Which receipt an answer acknowledges; never sent to the device.
        draft.content.meta["receipt"] = .string(id.lowercasedText)
        let first = ReceiptRules.firstRepeat(createdAt: now, repeatSeconds: acknowledge.repeatSeconds, expireSeconds: acknowledge.expireSeconds)
        let receipt = Receipt(
            id: id, deviceID: device.id, tokenID: token, collapseID: collapseID, collapseIDGiven: given.collapseID != nil,
            tags: request.pushWard.tags, content: try JSONValue.object(draft.content.json).encoded(), repeatSeconds: acknowledge.repeatSeconds,
            expiresAt: first.expiresAt, nextRepeatAt: first.next, createdAt: now)
        let stored = try await storeCall {
            try await store.insertReceipt(receipt, maximumActivePerDevice: ReceiptRules.maximumActivePerDevice)
        }
        guard stored else {
            throw APIError.problem(
                "notification_receipt.limit_exceeded", status: .conflict,
                detail: "This device already has \(ReceiptRules.maximumActivePerDevice) notifications repeating until acknowledged; "
                    + "cancel one (POST /notifications/receipts/{id}/cancel) or wait for one to end.")
        }
        let sent: SendReceipt
        do throws(SendError) {
            sent = try await pipeline.send(draft, to: device)
        } catch {
            try? await store.deleteReceipt(id: id)
            throw SendAnswers.apiError(error, now: clock.now())
        }
        let replaced = try await storeCall { try await store.activateReceipt(id: id, notificationID: sent.notification.id, at: clock.now()) }
        self.replaced(replaced)
        wake()
        return ActionNotificationAnswer.created(sent, of: request, now: clock.now(), receipt: receipt)
    }
}
