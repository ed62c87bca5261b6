import CoreMetrics
import HeraldAPNs
import HeraldCore
import HeraldDelivery

/// The server's own instruments (swift-metrics): sends accepted and refused per API dialect, rate-limited requests,
/// WebSocket confirmations, and the gauges read when `/metrics` is scraped. Label values are bounded: a dialect is
/// one of three words, a reason one of ``ErrorCode``'s codes, a limit one of three words. Never a USER_ID, a token
/// or a path.
struct ServerMetrics: Sendable {
    /// The metrics this type reports.
    static let descriptions: [MetricDescription] = [
        .init(
            "herald_notifications_accepted_total", .counter, labels: ["dialect"],
            help: "Notifications accepted (stored in the outbox) by a send API."),
        .init(
            "herald_notifications_rejected_total", .counter, labels: ["dialect", "reason"],
            help: "Send requests refused, by the error code of the answer."),
        .init(
            "herald_rate_limited_requests_total", .counter, labels: ["limit"],
            help: "Requests answered 429 (limit: daily_quota, registrations, auth_failures)."),
        .init(
            "herald_websocket_confirmations_total", .counter, labels: ["result"],
            help: "Notifications sent to confirming WebSocket clients, by whether one confirmed in time."),
        .init("herald_websocket_connections", .gauge, help: "WebSocket clients subscribed to a device's notifications."),
        .init("herald_outbox_pending", .gauge, help: "Notifications pending delivery (counted up to 1,000,000)."),
        .init(
            "herald_outbox_due", .gauge,
            help: "Pending notifications whose next attempt is due now, those being attempted included (up to 1,000,000)."),
        .init("herald_delivery_slots", .gauge, help: "Delivery slots (HERALD_DELIVERY_CONCURRENCY)."),
        .init("herald_delivery_slots_in_use", .gauge, help: "Delivery slots running an attempt now."),
        .init("herald_delivery_waiting", .gauge, help: "Notifications claimed by this instance and waiting for a slot."),
        .init(
            "herald_delivery_scheduled", .gauge,
            help: "Entries of the in-memory timer queue (retries, parked notifications)."),
        .init("herald_devices", .gauge, help: "Registered devices, active or not."),
        .init("herald_build_info", .gauge, labels: ["version"], help: "Always 1; the version label says which Herald runs."),
    ]

    /// Every metric Herald reports but the process metrics.
    static var all: [MetricDescription] {
        descriptions + DeliveryMetrics.descriptions + ProviderMetrics.descriptions
    }

    /// The send API a request was for.
    enum Dialect: String, CaseIterable {
        /// `POST /api/push/notify`.
        case notify
        /// `POST /api/push/homeassistant`.
        case homeAssistant = "homeassistant"
        /// `POST /notifications`.
        case notifications
        /// The senders other tools speak (docs/senders.md): ntfy, Gotify, Bark and the webhook presets.
        case senders

        /// The dialect of a `POST` to `path`, if it is a send.
        init?(path: String) {
            switch path {
            case "/api/push/notify": self = .notify
            case "/api/push/homeassistant": self = .homeAssistant
            case "/notifications": self = .notifications
            case "/", "/message", "/push": self = .senders
            case _ where path.hasPrefix("/api/push/hooks/"): self = .senders
            case _ where path.split(separator: "/").first.map({ UserID.accepts(String($0)) }) ?? false: self = .senders
            default: return nil
            }
        }
    }

    /// A limit that answered 429.
    enum RateLimit: String {
        case dailyQuota = "daily_quota"
        case registrations
        case authFailures = "auth_failures"

        init?(_ code: ErrorCode) {
            switch code {
            case .rateLimited: self = .dailyQuota
            case .registrationRateLimited: self = .registrations
            case .tooManyAuthFailures: self = .authFailures
            default: return nil
            }
        }
    }

    /// The largest outbox count a scrape makes (each count reads at most this many index entries).
    static let outboxCountLimit = 1_000_000

    private let factory: any MetricsFactory
    private let accepted: [Dialect: Counter]
    private let outboxPending: Gauge
    private let outboxDue: Gauge
    private let slots: Gauge
    private let slotsInUse: Gauge
    private let waiting: Gauge
    private let scheduled: Gauge
    private let webSocketConnections: Gauge
    private let devices: Gauge

    init(factory: any MetricsFactory) {
        self.factory = factory
        accepted = Dictionary(
            uniqueKeysWithValues: Dialect.allCases.map {
                (
                    $0,
                    Counter(
                        label: "herald_notifications_accepted_total", dimensions: [("dialect", $0.rawValue)], factory: factory)
                )
            })
        for limit in [RateLimit.dailyQuota, .registrations, .authFailures] {
            _ = Counter(label: "herald_rate_limited_requests_total", dimensions: [("limit", limit.rawValue)], factory: factory)
        }
        outboxPending = Gauge(label: "herald_outbox_pending", factory: factory)
        outboxDue = Gauge(label: "herald_outbox_due", factory: factory)
        slots = Gauge(label: "herald_delivery_slots", factory: factory)
        slotsInUse = Gauge(label: "herald_delivery_slots_in_use", factory: factory)
        waiting = Gauge(label: "herald_delivery_waiting", factory: factory)
        scheduled = Gauge(label: "herald_delivery_scheduled", factory: factory)
        webSocketConnections = Gauge(label: "herald_websocket_connections", factory: factory)
        devices = Gauge(label: "herald_devices", factory: factory)
        Gauge(label: "herald_build_info", dimensions: [("version", HeraldVersion.current)], factory: factory).record(1)
    }

    func accepted(_ dialect: Dialect) {
        accepted[dialect]?.increment()
    }

    func rejected(_ dialect: Dialect, reason: String) {
        Counter(
            label: "herald_notifications_rejected_total", dimensions: [("dialect", dialect.rawValue), ("reason", reason)],
            factory: factory
        ).increment()
    }

    func rateLimited(_ limit: RateLimit) {
        Counter(label: "herald_rate_limited_requests_total", dimensions: [("limit", limit.rawValue)], factory: factory)
            .increment()
    }

    /// Sets the gauges read at scrape time; a value that could not be read (`nil`) keeps its last one.
    func update(outbox: OutboxDepth?, load: DeliveryLoad, webSocketConnections connections: Int, devices count: Int?) {
        if let outbox {
            outboxPending.record(outbox.pending)
            outboxDue.record(outbox.due)
        }
        slots.record(load.slots)
        slotsInUse.record(load.inFlight)
        waiting.record(load.waiting)
        scheduled.record(load.scheduled)
        webSocketConnections.record(connections)
        if let count { devices.record(count) }
    }
}

/// Counts what became of notifications sent to WebSocket clients that confirm (`confirmed`, `timed_out`).
struct WebSocketConfirmationMetrics: Sendable {
    private let confirmed: Counter
    private let timedOut: Counter

    init(factory: any MetricsFactory) {
        confirmed = Counter(
            label: "herald_websocket_confirmations_total", dimensions: [("result", "confirmed")], factory: factory)
        timedOut = Counter(label: "herald_websocket_confirmations_total", dimensions: [("result", "timed_out")], factory: factory)
    }

    func record(confirmed isConfirmed: Bool) {
        (isConfirmed ? confirmed : timedOut).increment()
    }
}
