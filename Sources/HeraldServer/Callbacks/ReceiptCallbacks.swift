import Foundation
import HeraldCore
import Logging

/// Posts the end of a receipt (acknowledged or expired; docs/api.md, "Callbacks") to the `callback_url` its
/// notification was sent with, signed with the sending token's secret, through the callback outbox. Canceled and
/// replaced receipts post nothing (the sender ended them). Told once, on the instance that ended the receipt.
struct ReceiptCallbacks: ReceiptEndedObserver {
    let outbox: CallbackOutbox
    let logger: Logger

    func receiptEnded(_ receipt: Receipt, tokenID: APIToken.ID) async {
        let event: CallbackEvent
        switch receipt.status {
        case .acknowledged: event = .acknowledged
        case .expired: event = .expired
        default: return
        }
        guard let notificationID = receipt.notificationID else { return }
        do {
            guard let notification = try await outbox.store.notification(id: notificationID) else { return }
            _ = try await outbox.enqueueIfRequested(event, data: ReceiptJSON.receipt(receipt), for: notification)
        } catch {
            logger.warning(
                "Could not enqueue a receipt's callback; it is not sent",
                metadata: ["receipt": "\(receipt.id)", "error": "\(error)"])
        }
    }
}

/// Tells each of `observers` in turn.
struct ReceiptObservers: ReceiptEndedObserver {
    let observers: [any ReceiptEndedObserver]

    func receiptEnded(_ receipt: Receipt, tokenID: APIToken.ID) async {
        for observer in observers { await observer.receiptEnded(receipt, tokenID: tokenID) }
    }
}
