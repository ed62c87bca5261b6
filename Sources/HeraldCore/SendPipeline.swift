import Foundation
import Logging

/// Why a send was refused. Each API dialect maps these to its own HTTP answer, in one place.
public enum SendError: Error, Sendable, Equatable {
    /// The device's token is dead; it must register again.
    case deviceInactive(reason: String)
    /// The day's quota is used up.
    case quotaExceeded(QuotaStatus)
    /// An exempt notification (critical alert, command) and the day's cap on those is used up; the status is the
    /// device's ordinary quota.
    case exemptQuotaExceeded(QuotaStatus, exemptMaximum: Int)
    /// The device already has `maximumPending` notifications waiting for delivery.
    case backlogFull(QuotaStatus, maximumPending: Int)
    /// The payload does not fit the provider's limit even with the body shortened away.
    case payloadTooLarge(minimumBytes: Int, limit: Int)
    /// The provider refused the notification for good on the first attempt.
    case rejectedByProvider(notificationID: PushNotification.ID, reason: String)
    /// The provider said the device token is dead on the first attempt.
    case deadTokenDetected(notificationID: PushNotification.ID, reason: String)
    /// The store failed.
    case storeUnavailable(String)
    /// The payload could not be written as JSON (a value JSON has no form for): Herald's fault, not the store's.
    case payloadNotEncodable(String)
}

/// What the sender is told after a notification was accepted.
public struct SendReceipt: Sendable, Equatable {
    /// The notification as it stands when the answer is given.
    public var notification: PushNotification
    /// Whether the body was shortened to fit the payload limit.
    public var truncated: Bool
    /// A note for the sender, e.g. that no provider can deliver to this device yet.
    public var warning: String?
    /// The device's quota after this notification was counted.
    public var quota: QuotaStatus

    /// `delivered` once a provider accepted it, otherwise `queued`.
    public var statusWord: String { notification.status == .delivered ? "delivered" : "queued" }
}

/// The one path every send API takes: fit the payload, count it against the daily quota and store it (group commit,
/// already leased to this instance's worker), then hand it to the delivery worker and wait briefly for the first
/// attempt. The attempt's verdict, classified once by the provider, becomes the answer; the device is not read again.
public struct SendPipeline: Sendable {
    /// Tuning of the pipeline.
    public struct Configuration: Sendable {
        /// The default daily maximum per device.
        public var dailyLimit: Int
        /// How long a notification is tried before it expires; also the longest a sender's own expiry may reach.
        public var timeToLive: TimeInterval
        /// Notifications exempt from the daily limit (critical alerts, commands) that one device may get per UTC day.
        public var exemptDailyLimit: Int
        /// Notifications one device may have pending at once; beyond it a send is refused (``SendError/backlogFull``).
        public var maximumPendingPerDevice: Int

        public init(
            dailyLimit: Int = 150, timeToLive: TimeInterval = 86_400, exemptDailyLimit: Int = 50, maximumPendingPerDevice: Int = 1_000
        ) {
            self.dailyLimit = dailyLimit
            self.timeToLive = timeToLive
            self.exemptDailyLimit = exemptDailyLimit
            self.maximumPendingPerDevice = maximumPendingPerDevice
        }
    }

    private let store: any HeraldStore
    private let worker: DeliveryWorker
    private let clock: any WallClock
    private let configuration: Configuration

    public init(store: any HeraldStore, worker: DeliveryWorker, clock: any WallClock, configuration: Configuration) {
        self.store = store
        self.worker = worker
        self.clock = clock
        self.configuration = configuration
    }

    /// The quota of a device today.
    public func quota(of device: Device) async throws(SendError) -> QuotaStatus {
        let day = UTCDay(containing: clock.now())
        do {
            let counters = try await store.quotaCounters(deviceID: device.id, day: day.description)
            return QuotaStatus(counters: counters, maximum: dailyLimit(of: device), resetsAt: day.end)
        } catch {
            throw .storeUnavailable("\(error)")
        }
    }

    /// One notification, as it stands after every write queued before this call: a sender answered `delivered` reads
    /// `delivered`, although the answer went out before that outcome was durable.
    public func notification(id: PushNotification.ID) async throws -> PushNotification? {
        try await worker.outbox.notification(id: id)
    }

    /// Accepts a notification for a device: durable before this returns.
    public func send(_ draft: NotificationDraft, to device: Device) async throws(SendError) -> SendReceipt {
        guard device.isActive else {
            throw .deviceInactive(reason: device.inactiveReason ?? "the device has no push token")
        }
        let fitted: (data: Data, truncated: Bool)
        do {
            fitted = try PayloadFitter.fit(draft.payload, limit: PayloadFitter.limit(for: device.platform), bodyPath: draft.bodyPath)
        } catch let error as PayloadFitter.TooLarge {
            throw .payloadTooLarge(minimumBytes: error.minimumBytes, limit: error.limit)
        } catch {
            throw .payloadNotEncodable("\(error)")
        }

        let now = clock.now()
        let day = UTCDay(containing: now)
        let maximum = dailyLimit(of: device)
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: draft.pushType, priority: draft.priority,
            collapseID: draft.collapseID, payload: fitted.data, quotaDay: draft.isExemptFromQuota ? nil : day.description,
            createdAt: now, expiresAt: Self.expiry(draft.expiresAt, now: now, timeToLive: configuration.timeToLive),
            liveActivityToken: draft.liveActivityToken)

        let quota = QuotaRequest(
            day: day.description, maximum: draft.isExemptFromQuota ? nil : maximum,
            exemptMaximum: draft.isExemptFromQuota ? configuration.exemptDailyLimit : nil,
            pendingMaximum: configuration.maximumPendingPerDevice)
        let (decision, route) = try await store(notification, quota: quota, for: device)
        let counters: QuotaCounters
        switch decision {
        case .quotaExceeded(let refused):
            throw .quotaExceeded(QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end))
        case .exemptQuotaExceeded(let refused):
            throw .exemptQuotaExceeded(
                QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end), exemptMaximum: configuration.exemptDailyLimit)
        case .backlogFull(let refused):
            throw .backlogFull(
                QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end), maximumPending: configuration.maximumPendingPerDevice)
        case .accepted(let accepted, _):
            counters = accepted
        }
        let quotaStatus = QuotaStatus(counters: counters, maximum: maximum, resetsAt: day.end)
        if case .accepted(_, usedUpQuota: true) = decision { await announceQuotaUsedUp(to: device, quota: quotaStatus) }

        switch route {
        case .parked:
            let reason =
                device.platform == .websocket
                ? "No WebSocket client of this device is connected"
                : "No delivery provider for \(device.platform.rawValue) devices is configured and no WebSocket client of this device is connected"
            return SendReceipt(
                notification: notification, truncated: fitted.truncated,
                warning: reason + "; the notification is stored and will be delivered when one can take it.", quota: quotaStatus)
        case .scheduled:
            return SendReceipt(notification: notification, truncated: fitted.truncated, warning: nil, quota: quotaStatus)
        case .leased:
            break
        }
        guard let report = await worker.deliver(notification, device: device) else {
            return SendReceipt(notification: notification, truncated: fitted.truncated, warning: nil, quota: quotaStatus)
        }
        switch report.verdict {
        case .delivered, .willRetry, .parked, .handedOver:
            return SendReceipt(notification: report.notification, truncated: fitted.truncated, warning: nil, quota: quotaStatus)
        case .deadToken(let reason), .deviceUnavailable(let reason):
            throw .deadTokenDetected(notificationID: notification.id, reason: reason)
        case .refused(let reason):
            throw .rejectedByProvider(notificationID: notification.id, reason: reason)
        case .expired:
            throw .rejectedByProvider(notificationID: notification.id, reason: report.notification.lastError ?? "expired")
        }
    }

    /// When a notification expires: the sender's expiry, but never later than the time to live from now (a sender
    /// could otherwise keep one alive until 2100).
    static func expiry(_ requested: Date?, now: Date, timeToLive: TimeInterval) -> Date {
        let latest = now.addingTimeInterval(timeToLive)
        return min(requested ?? latest, latest)
    }

    /// Queues the one notification that tells the device its quota for today is used up (exempt from the quota
    /// itself), as Home Assistant's relay does. The app can localise it with the `rate_limit` member.
    private func announceQuotaUsedUp(to device: Device, quota: QuotaStatus) async {
        let now = clock.now()
        let title = "Notifications paused"
        let body =
            "This device has received its \(quota.maximum) notifications for today. Further notifications are refused until \(quota.resetsAt.iso8601WithMilliseconds)."
        let payload: JSONObject
        if device.platform == .fcm {
            // As Home Assistant's relay words it for Android: localisable keys, the figures in `data`.
            payload = [
                "notification": ["title": .string(title), "body": .string(body)],
                "data": [
                    "rateLimited": "true", "maxNotificationsPerDay": .string(String(quota.maximum)),
                    "resetsAt": .string(quota.resetsAt.iso8601WithMilliseconds),
                ],
                "android": [
                    "collapse_key": "herald-rate-limit",
                    "notification": [
                        "title_loc_key": "rate_limit_notification.title", "body_loc_key": "rate_limit_notification.body",
                        "body_loc_args": [.string(String(quota.maximum))], "tag": "herald-rate-limit",
                    ],
                ],
            ]
        } else {
            payload = [
                "aps": ["alert": ["title": .string(title), "body": .string(body)], "sound": "default"],
                "rate_limit": [
                    "loc-key": "rate_limit_notification.body", "title-loc-key": "rate_limit_notification.title",
                    "maximum": .int(quota.maximum), "resetsAt": .string(quota.resetsAt.iso8601WithMilliseconds),
                ],
            ]
        }
        guard let data = try? JSONValue.object(payload).encoded() else { return }
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: .alert, priority: 10,
            collapseID: "herald-rate-limit", payload: data, quotaDay: nil,
            createdAt: now, expiresAt: quota.resetsAt)
        _ = try? await store(
            notification, quota: QuotaRequest(day: UTCDay(containing: now).description, maximum: nil, countsAttempt: false),
            for: device, startingDelivery: true)
    }

    /// Where a stored notification went.
    private enum Route {
        /// Leased to this instance's worker: the caller delivers it (or it was started already).
        case leased
        /// Delivery is saturated: stored unleased, it waits in the scheduler's queue and the store.
        case scheduled
        /// Nothing can deliver to the device now: stored, parked until a client or a provider can take it.
        case parked
    }

    /// Accepts a notification through the group commit, leased to this instance's worker when something can deliver
    /// it now and delivery is not saturated, and hands it on: scheduled when saturated, started at once when leased
    /// and `startingDelivery` (otherwise the caller delivers it and waits for the first attempt).
    private func store(
        _ notification: PushNotification, quota: QuotaRequest, for device: Device, startingDelivery: Bool = false
    ) async throws(SendError) -> (AcceptDecision, Route) {
        let canDeliver = worker.canDeliver(to: device)
        let lease = canDeliver ? worker.leaseForFreshNotification(for: device.id) : nil
        let decision: AcceptDecision
        do {
            decision = try await worker.outbox.accept(AcceptRequest(notification: notification, quota: quota, lease: lease))
        } catch {
            throw .storeUnavailable("\(error)")
        }
        guard case .accepted = decision else { return (decision, .parked) }  // not stored: the route means nothing
        if lease != nil {
            if startingDelivery { worker.start(notification, device: device) }
            return (decision, .leased)
        }
        guard canDeliver else { return (decision, .parked) }
        worker.scheduleUnleased(notification)
        return (decision, .scheduled)
    }

    private func dailyLimit(of device: Device) -> Int { device.dailyLimit ?? configuration.dailyLimit }
}
