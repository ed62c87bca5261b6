import CoreMetrics

/// A push provider's instruments (swift-metrics): every HTTP request to APNs or FCM, how long it took and what came
/// back. Label values are bounded: `provider` is `apns` or `fcm`, `status` an HTTP status code or `none` (no answer),
/// `reason` one of the provider's documented reasons or error codes, `unknown` (one added since), `none` (no reason in
/// the answer), or for no answer `timeout`, `connection_lost` or `error`. Never a device token or a message id.
public struct ProviderMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        .init(
            "herald_provider_request_duration_seconds", .histogram, labels: ["provider"],
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
            help: "Time from sending one request to a push provider to its answer (or its failure)."),
        .init(
            "herald_provider_responses_total", .counter, labels: ["provider", "status", "reason"],
            help: "Requests to a push provider by HTTP status (none: no answer) and the provider's reason."),
    ]

    private let provider: String
    private let factory: any MetricsFactory
    private let duration: Timer
    private let accepted: Counter

    public init(provider: String, factory: any MetricsFactory) {
        self.provider = provider
        self.factory = factory
        duration = Timer(label: "herald_provider_request_duration_seconds", dimensions: [("provider", provider)], factory: factory)
        accepted = Counter(
            label: "herald_provider_responses_total", dimensions: [("provider", provider), ("status", "200"), ("reason", "none")],
            factory: factory)
    }

    /// Records one request: its labels and how long it took.
    public func record(_ labels: (status: String, reason: String), duration elapsed: Duration) {
        let (seconds, attoseconds) = elapsed.components
        duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        if labels.status == "200", labels.reason == "none" {
            accepted.increment()
        } else {
            Counter(
                label: "herald_provider_responses_total",
                dimensions: [("provider", provider), ("status", labels.status), ("reason", labels.reason)], factory: factory
            ).increment()
        }
    }
}
