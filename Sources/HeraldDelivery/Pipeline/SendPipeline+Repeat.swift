import Foundation
import HeraldCore

extension SendPipeline {
    /// Sends one repeat of a notification that repeats until acknowledged (docs/api.md, "Receipts"): rendered and
    /// fitted like any send, accepted durably under the device's backlog bound but **not counted** against the daily
    /// limit or the exempt cap, and handed to the delivery engine without waiting for the attempt (the outbox retries
    /// it as any notification). Returns the repeat's notification.
    public func sendRepeat(_ draft: NotificationDraft, to device: Device) async throws(SendError) -> PushNotification {
        guard device.isActive else {
            throw .deviceInactive(reason: device.inactiveReason ?? "the device has no push token")
        }
        let fitted = try fitted(draft, for: device)
        let now = clock.now()
        let day = UTCDay(containing: now)
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: draft.pushType, priority: fitted.priority,
            collapseID: draft.collapseID, payload: fitted.data, quotaDay: nil, createdAt: now,
            expiresAt: Self.expiry(draft.expiresAt, now: now, timeToLive: configuration.timeToLive),
            liveActivityToken: draft.liveActivityToken, renderedBy: fitted.renderedBy, content: draft.content)
        let quota = QuotaRequest(
            day: day.description, maximum: nil, countsAttempt: false, pendingMaximum: configuration.maximumPendingPerDevice)
        let (decision, _) = try await store(notification, quota: quota, for: device, startingDelivery: true)
        _ = try acceptedCounters(decision, maximum: dailyLimit(of: device), day: day)
        return notification
    }
}
