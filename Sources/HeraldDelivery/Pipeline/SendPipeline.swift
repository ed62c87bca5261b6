import Foundation
import HeraldCore
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
    /// The provider refused the notification for good on the first attempt; the quota as this notification left it
    /// (it was accepted and counted, then refused: the answer's `RateLimit-*` headers need no second read).
    case rejectedByProvider(notificationID: PushNotification.ID, reason: String, quota: QuotaStatus)
    /// The provider said the device token is dead on the first attempt; the quota as this notification left it.
    case deadTokenDetected(notificationID: PushNotification.ID, reason: String, quota: QuotaStatus)
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

    /// `delivered` once a provider accepted it, `stored` when it is kept without a push, otherwise `queued`.
    public var statusWord: String {
        switch notification.status {
        case .delivered: "delivered"
        case .stored: "stored"
        default: "queued"
        }
    }
}

/// The one path every send API takes: render the content for the device's provider and fit it, count it against the
/// daily quota and store it (group commit, already leased to this instance's delivery engine), then hand it to the
/// engine and wait briefly for the first
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

    let store: any NotificationStore
    let engine: DeliveryEngine
    let clock: any WallClock
    let configuration: Configuration
    /// The renderer of each platform's payload.
    public let renderers: PayloadRenderers
    /// How long an accepted notification is kept for delivery (`HERALD_TTL`).
    public var timeToLive: TimeInterval { configuration.timeToLive }

    public init(
        store: any NotificationStore, engine: DeliveryEngine, clock: any WallClock, configuration: Configuration, renderers: PayloadRenderers
    ) {
        self.renderers = renderers
        self.store = store
        self.engine = engine
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
        try await engine.notification(id: id)
    }

    /// The draft's payload as the device's renderer writes it, fitted to its provider's limit.
    func fitted(_ draft: NotificationDraft, for device: Device) throws(SendError) -> FittedPayload {
        do {
            return try renderers.renderer(for: device.platform).fitted(draft.content, priority: draft.priority, collapseID: draft.collapseID)
        } catch let error as PayloadFitter.TooLarge {
            throw .payloadTooLarge(minimumBytes: error.minimumBytes, limit: error.limit)
        } catch {
            throw .payloadNotEncodable("\(error)")
        }
    }

    /// The counters of an accepted notification; a refusal as the send's error, with the quota as it stands.
    func acceptedCounters(_ decision: AcceptDecision, maximum: Int, day: UTCDay) throws(SendError) -> QuotaCounters {
        switch decision {
        case .accepted(let counters, _):
            return counters
        case .quotaExceeded(let refused):
            throw .quotaExceeded(QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end))
        case .exemptQuotaExceeded(let refused):
            throw .exemptQuotaExceeded(
                QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end), exemptMaximum: configuration.exemptDailyLimit)
        case .backlogFull(let refused):
            throw .backlogFull(
                QuotaStatus(counters: refused, maximum: maximum, resetsAt: day.end), maximumPending: configuration.maximumPendingPerDevice)
        }
    }

    /// Accepts a notification for a device: durable before this returns.
    public func send(_ draft: NotificationDraft, to device: Device) async throws(SendError) -> SendReceipt {
        guard device.isActive else {
            throw .deviceInactive(reason: device.inactiveReason ?? "the device has no push token")
        }
        let fitted = try fitted(draft, for: device)

        let now = clock.now()
        let day = UTCDay(containing: now)
        let maximum = dailyLimit(of: device)
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: draft.pushType, priority: fitted.priority,
            collapseID: draft.collapseID, payload: fitted.data, quotaDay: draft.isExemptFromQuota ? nil : day.description,
            createdAt: now, expiresAt: Self.expiry(draft.expiresAt, now: now, timeToLive: configuration.timeToLive),
            liveActivityToken: draft.liveActivityToken, renderedBy: fitted.renderedBy, content: draft.content)

        let quota = QuotaRequest(
            day: day.description, maximum: draft.isExemptFromQuota ? nil : maximum,
            exemptMaximum: draft.isExemptFromQuota ? configuration.exemptDailyLimit : nil,
            pendingMaximum: configuration.maximumPendingPerDevice)
        let (decision, route) = try await store(notification, quota: quota, for: device)
        let counters = try acceptedCounters(decision, maximum: maximum, day: day)
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
        guard let report = await engine.deliver(notification, device: device) else {
            return SendReceipt(notification: notification, truncated: fitted.truncated, warning: nil, quota: quotaStatus)
        }
        let released = Self.released(quotaStatus, by: notification)
        switch report.verdict {
        case .delivered, .willRetry, .parked, .handedOver:
            return SendReceipt(notification: report.notification, truncated: fitted.truncated, warning: nil, quota: quotaStatus)
        case .deadToken(let reason), .deviceUnavailable(let reason):
            throw .deadTokenDetected(notificationID: notification.id, reason: reason, quota: released)
        case .refused(let reason):
            throw .rejectedByProvider(notificationID: notification.id, reason: reason, quota: released)
        case .expired:
            throw .rejectedByProvider(notificationID: notification.id, reason: report.notification.lastError ?? "expired", quota: released)
        }
    }

    /// The quota once a notification that failed for good gave its place back (its outcome releases the quota: it
    /// counts as an error, not as a success); unchanged for a notification outside the daily limit.
    static func released(_ quota: QuotaStatus, by notification: PushNotification) -> QuotaStatus {
        guard notification.quotaDay != nil else { return quota }
        var released = quota
        released.counters.release()
        return released
    }

    /// When a notification expires: the sender's expiry, but never later than the time to live from now (a sender
    /// could otherwise keep one alive until 2100).
    static func expiry(_ requested: Date?, now: Date, timeToLive: TimeInterval) -> Date {
        let latest = now.addingTimeInterval(timeToLive)
        return min(requested ?? latest, latest)
    }

    /// Queues the one notification that tells the device its quota for today is used up (exempt from the quota
    /// itself), as Home Assistant's relay does. The app can localise it with the `rate_limit` member.
    func announceQuotaUsedUp(to device: Device, quota: QuotaStatus) async {
        let now = clock.now()
        let title = "Notifications paused"
        let body =
            "This device has received its \(quota.maximum) notifications for today. Further notifications are refused until \(quota.resetsAt.iso8601WithMilliseconds)."
        let content = QuotaAnnouncement.content(title: title, body: body, maximum: quota.maximum, resetsAt: quota.resetsAt)
        guard let fitted = try? renderers.renderer(for: device.platform).fitted(content, priority: .high, collapseID: "herald-rate-limit") else { return }
        let notification = PushNotification(
            id: .timeOrdered(at: now), deviceID: device.id, pushType: .alert, priority: fitted.priority,
            collapseID: "herald-rate-limit", payload: fitted.data, quotaDay: nil,
            createdAt: now, expiresAt: quota.resetsAt, renderedBy: fitted.renderedBy, content: content)
        _ = try? await store(
            notification, quota: QuotaRequest(day: UTCDay(containing: now).description, maximum: nil, countsAttempt: false),
            for: device, startingDelivery: true)
    }

    /// Accepts a notification through the engine (group commit), leased to this instance when something can deliver
    /// it now and delivery is not saturated: scheduled when saturated, started at once when leased and
    /// `startingDelivery` (otherwise the caller delivers it and waits for the first attempt). Internal, not private:
    /// the repeats of receipts (Receipts/SendPipeline+Repeat.swift) accept through it too.
    func store(
        _ notification: PushNotification, quota: QuotaRequest, for device: Device, startingDelivery: Bool = false
    ) async throws(SendError) -> (AcceptDecision, AcceptRoute) {
        do {
            return try await engine.accept(notification, quota: quota, for: device, startingDelivery: startingDelivery)
        } catch {
            throw .storeUnavailable("\(error)")
        }
    }

    func dailyLimit(of device: Device) -> Int { device.dailyLimit ?? configuration.dailyLimit }
}
