import CoreMetrics
import HeraldCore

/// The delivery engine's instruments (swift-metrics): what became of delivery attempts, by the channel that made
/// them, and the group commit's batches. Label values are bounded: `provider` is a platform (`apns`, `fcm`,
/// `websocket`, the WebSocket channel) or `none` (nothing was attempted), `reason` one of three words.
///
/// ```swift
/// let engine = DeliveryEngine(store: store, providers: providers, metrics: DeliveryMetrics(factory: factory), logger: logger)
/// ```
public struct DeliveryMetrics: Sendable {
    /// The metrics this type reports.
    public static let descriptions: [MetricDescription] = [
        .init(
            "herald_notifications_delivered_total", .counter, labels: ["provider"],
            help: "Notifications a provider or a WebSocket client took."),
        .init(
            "herald_notifications_retried_total", .counter, labels: ["provider"],
            help: "Delivery attempts that failed transiently; the notification is tried again later."),
        .init(
            "herald_notifications_failed_total", .counter, labels: ["provider", "reason"],
            help: "Notifications that failed for good (reason: dead_token, refused, device_unavailable)."),
        .init(
            "herald_notifications_expired_total", .counter, labels: ["provider"],
            help: "Notifications whose time to live passed before anything took them."),
        .init(
            "herald_notifications_parked_total", .counter,
            help: "Delivery attempts that found nothing able to deliver (no provider, no WebSocket client)."),
        .init(
            "herald_notifications_handed_over_total", .counter,
            help: "Notifications handed to the instance where their device's WebSocket client is connected."),
        .init(
            "herald_store_commit_batch_entries", .histogram, buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_024],
            help: "Accepts and delivery outcomes written by one group commit."),
        .init(
            "herald_store_commit_duration_seconds", .histogram,
            buckets: [0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
            help: "Time one group commit took to write its batch (one transaction)."),
    ]

    /// The `provider` label of an attempt that reached no channel.
    public static let noProvider = "none"

    private let delivered: [String: Counter]
    private let retried: [String: Counter]
    private let expired: [String: Counter]
    private let failed: [String: [String: Counter]]
    private let parked: Counter
    private let handedOver: Counter
    private let batchEntries: Recorder
    private let commitDuration: Timer

    /// Instruments reporting to `factory` (by default swift-metrics' global one, which does nothing unless bootstrapped),
    /// labelled with each of `platforms` (the server's providers and the WebSocket channel) and `none`.
    public init(factory: any MetricsFactory = MetricsSystem.factory, platforms: [Platform] = Platform.builtIn) {
        let providers = Array(Set(platforms.map(\.rawValue) + [Self.noProvider]))
        func counters(_ name: String, _ more: [(String, String)] = []) -> [String: Counter] {
            Dictionary(
                uniqueKeysWithValues: providers.map {
                    ($0, Counter(label: name, dimensions: [("provider", $0)] + more, factory: factory))
                })
        }
        delivered = counters("herald_notifications_delivered_total")
        retried = counters("herald_notifications_retried_total")
        expired = counters("herald_notifications_expired_total")
        failed = Dictionary(
            uniqueKeysWithValues: FailureReason.allCases.map {
                ($0.rawValue, counters("herald_notifications_failed_total", [("reason", $0.rawValue)]))
            })
        parked = Counter(label: "herald_notifications_parked_total", factory: factory)
        handedOver = Counter(label: "herald_notifications_handed_over_total", factory: factory)
        batchEntries = Recorder(label: "herald_store_commit_batch_entries", aggregate: true, factory: factory)
        commitDuration = Timer(label: "herald_store_commit_duration_seconds", factory: factory)
    }

    private enum FailureReason: String, CaseIterable {
        case deadToken = "dead_token"
        case refused
        case deviceUnavailable = "device_unavailable"
    }

    /// Counts the verdict of one attempt whose outcome was saved; `provider` is the channel that made it.
    func record(_ verdict: AttemptVerdict, provider: String) {
        let provider = delivered[provider] == nil ? Self.noProvider : provider
        switch verdict {
        case .delivered: delivered[provider]?.increment()
        case .willRetry: retried[provider]?.increment()
        case .parked: parked.increment()
        case .handedOver: handedOver.increment()
        case .expired: expired[provider]?.increment()
        case .deadToken: failed[FailureReason.deadToken.rawValue]?[provider]?.increment()
        case .refused: failed[FailureReason.refused.rawValue]?[provider]?.increment()
        case .deviceUnavailable: failed[FailureReason.deviceUnavailable.rawValue]?[provider]?.increment()
        }
    }

    /// Records one group commit: how many entries it wrote and how long the write took.
    func recordCommit(entries: Int, duration: Duration) {
        batchEntries.record(entries)
        let (seconds, attoseconds) = duration.components
        commitDuration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// How busy the delivery engine is, read when metrics are scraped.
public struct DeliveryLoad: Sendable, Equatable {
    /// Delivery slots (`HERALD_DELIVERY_CONCURRENCY`).
    public var slots: Int
    /// Slots running an attempt now.
    public var inFlight: Int
    /// Notifications claimed by this instance and waiting for a slot.
    public var waiting: Int
    /// Entries of the in-memory timer queue (retries, parked notifications, work beyond the ready queue).
    public var scheduled: Int
}
