import Foundation
import HeraldCore

extension SendPipeline {
    /// Keeps a notification in the device's inbox without pushing it (`POST /notifications` with `"push": false`):
    /// rendered and fitted as a push would be, counted against the daily quota like one (an exempt one against the
    /// exempt cap), and stored with the status ``DeliveryStatus/stored``, which no delivery ever claims. Durable before
    /// this returns; the device needs no push token.
    public func keep(_ draft: NotificationDraft, for device: Device) async throws(SendError) -> SendReceipt {
        let fitted = try fitted(draft, for: device)
        let now = clock.now()
        let day = UTCDay(containing: now)
        let maximum = dailyLimit(of: device)
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: draft.pushType, priority: fitted.priority,
            collapseID: draft.collapseID, payload: fitted.data, quotaDay: draft.isExemptFromQuota ? nil : day.description,
            status: .stored, createdAt: now, expiresAt: Self.expiry(draft.expiresAt, now: now, timeToLive: configuration.timeToLive),
            renderedBy: fitted.renderedBy, content: draft.content)
        let quota = QuotaRequest(
            day: day.description, maximum: draft.isExemptFromQuota ? nil : maximum,
            exemptMaximum: draft.isExemptFromQuota ? configuration.exemptDailyLimit : nil)
        let decision: AcceptDecision
        do {
            decision = try await store.accept(notification, quota: quota)
        } catch {
            throw .storeUnavailable("\(error)")
        }
        let counters = try acceptedCounters(decision, maximum: maximum, day: day)
        let status = QuotaStatus(counters: counters, maximum: maximum, resetsAt: day.end)
        return SendReceipt(notification: notification, truncated: fitted.truncated, warning: nil, quota: status)
    }
}
