import Foundation
import HeraldCore
import HeraldDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// The long polls of `GET /notifications/receipts/{id}?wait=N`: a waiter wakes once its receipt has ended.
typealias ReceiptWaiters = LongPollWaiters<Receipt.ID, Receipt>

extension LongPollWaiters where Key == Receipt.ID, Value == Receipt {
    convenience init(store: any ReceiptStore, pollInterval: Duration? = nil) {
        self.init(pollInterval: pollInterval) { ids in try await store.receipts(ids: ids).filter { $0.value.status.isEnded } }
    }
}

/// Sends the repeats of notifications that repeat until acknowledged (a `Service`; docs/api.md, "Receipts"): claims
/// due receipts from the store with a lease (as the scheduled sends do: several instances each take different ones, a
/// crashed instance's are taken again once its lease expires), sends each repeat through
/// ``SendPipeline/sendRepeat(_:to:)`` (not counted against the daily limit) under the receipt's collapse id, and ends
/// receipts that expired. It also ends receipts for the HTTP side (acknowledged, canceled), waking the receipt's long
/// polls and telling the ``ReceiptEndedObserver`` of those acknowledged or expired, once, on the instance that ended it.
///
/// Crash window: a repeat that went out but whose count was not saved before a `kill -9` goes out again when its lease
/// expires (at most once more).
final class ReceiptDispatcher: Service, Sendable {
    static let leaseDuration: TimeInterval = 60
    static let batch = 50

    let store: any DeviceStore & ReceiptStore
    let pipeline: SendPipeline
    let clock: any WallClock
    let waiters: ReceiptWaiters
    private let observer: any ReceiptEndedObserver
    private let instanceID: String
    private let pollInterval: Duration
    private let logger: Logger
    private let passes = PassLoop()
    private let lastFailureLog = Mutex<ContinuousClock.Instant?>(nil)

    init(
        store: any DeviceStore & ReceiptStore, pipeline: SendPipeline, clock: any WallClock, instanceID: String, waiters: ReceiptWaiters,
        observer: any ReceiptEndedObserver = NoReceiptEndedObserver(), pollInterval: Duration = .seconds(1), logger: Logger
    ) {
        self.store = store
        self.pipeline = pipeline
        self.clock = clock
        self.instanceID = instanceID
        self.waiters = waiters
        self.observer = observer
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// Makes the next pass run now.
    func wake() { passes.wake() }

    func run() async throws {
        await passes.run(every: pollInterval) {
            do {
                while try await self.pass() == Self.batch, !Task.isCancelled {}
            } catch {
                self.logFailure("Receipts: a pass failed; it runs again", "\(error)")
            }
        }
    }

    /// Logged at most once a minute: a store that does not answer fails every pass.
    private func logFailure(_ message: Logger.Message, _ error: String) {
        let now = ContinuousClock.now
        let due = lastFailureLog.withLock { last in
            if let previous = last, now - previous < .seconds(60) { return false }
            last = now
            return true
        }
        if due { logger.warning(message, metadata: ["error": "\(error)"]) }
    }

    /// Claims the receipts due now and does what each needs (a repeat, its expiry); returns how many it claimed.
    @discardableResult
    func pass() async throws -> Int {
        let now = clock.now()
        let claimed = try await store.claimDueReceipts(
            at: now, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(Self.leaseDuration)), limit: Self.batch)
        await withTaskGroup(of: Void.self) { group in
            for receipt in claimed { group.addTask { await self.fire(receipt) } }
        }
        return claimed.count
    }

    private func fire(_ receipt: Receipt) async {
        do {
            guard let notificationID = receipt.notificationID else {
                // Its notification was never accepted (the request failed, or its instance crashed before it answered).
                try await end(receipt.id, .canceled(reason: "not_sent"))
                return
            }
            switch ReceiptRules.step(for: receipt, at: clock.now()) {
            case .expire:
                try await end(receipt.id, .expired)
            case .wait:
                try await store.completeReceiptRepeat(receipt, owner: instanceID)
            case .repeatNow:
                try await sendRepeat(of: receipt, notificationID: notificationID)
            }
        } catch {
            logFailure("Receipts: a receipt's step failed; it is taken again when its lease expires", "\(error)")
        }
    }

    private func sendRepeat(of receipt: Receipt, notificationID: PushNotification.ID) async throws {
        guard let device = try await store.device(id: receipt.deviceID) else {
            try await end(receipt.id, .canceled(reason: "device_removed"))
            return
        }
        var content = NotificationContent(json: try JSONValue.decode(receipt.content).objectValue ?? [:])
        // The app answers whichever push it shows; the answer is recorded on the first notification (Answers/).
        content.meta["repeat_of"] = .string(notificationID.lowercasedText)
        let draft = NotificationDraft(
            pushType: .alert, priority: .high, collapseID: receipt.collapseID, content: content, expiresAt: receipt.expiresAt)
        let sentAt = clock.now()
        let outcome: SendError?
        do throws(SendError) {
            _ = try await pipeline.sendRepeat(draft, to: device)
            outcome = nil
        } catch {
            outcome = error
        }
        if let error = outcome {
            switch error {
            case .deviceInactive:
                try await end(receipt.id, .canceled(reason: "device_inactive"))
            case .payloadTooLarge, .payloadNotEncodable:
                try await end(receipt.id, .canceled(reason: "payload_too_large"))
            case .backlogFull, .quotaExceeded, .exemptQuotaExceeded:
                // Skipped: the device has too much waiting already; the next repeat at its time.
                try await store.completeReceiptRepeat(ReceiptRules.afterSkippedRepeat(receipt, at: sentAt), owner: instanceID)
            case .rejectedByProvider, .deadTokenDetected:
                try await store.completeReceiptRepeat(ReceiptRules.afterRepeat(receipt, sentAt: sentAt), owner: instanceID)
            case .storeUnavailable(let cause):
                // Tried again once the lease expires.
                logFailure("Receipts: a repeat could not be stored; it is tried again when its lease expires", cause)
            }
        } else {
            try await store.completeReceiptRepeat(ReceiptRules.afterRepeat(receipt, sentAt: sentAt), owner: instanceID)
        }
    }

    /// Ends an active receipt; wakes its long polls, and tells the observer when it was acknowledged or expired. Returns
    /// the ended receipt, or `nil` when it had ended before.
    @discardableResult
    func end(_ id: Receipt.ID, _ ending: ReceiptEnding) async throws -> Receipt? {
        guard let ended = try await store.endReceipt(id: id, ending, at: clock.now()) else { return nil }
        waiters.answered(id)
        if ended.status == .acknowledged || ended.status == .expired {
            await observer.receiptEnded(ended, tokenID: ended.tokenID)
        }
        return ended
    }

    /// The person answered `notification` (or one of its repeats) on `device`: its receipt, if any, is acknowledged.
    func acknowledge(_ notification: PushNotification, actionID: String, by device: Device.ID) async throws {
        guard let text = notification.content?.meta["receipt"]?.stringValue, let id = UUID(uuidString: text) else { return }
        try await end(id, .acknowledged(actionID: actionID, byDevice: device))
    }

    /// Newer sends replaced these: their long polls wake.
    func replaced(_ receipts: [Receipt]) {
        for receipt in receipts { waiters.answered(receipt.id) }
    }
}
