import CoreMetrics
import HeraldCore

/// The APNs provider's instruments (swift-metrics): every HTTP request to APNs, how long it took and what came back.
/// Label values are bounded: `status` is an HTTP status code or `none` (no answer), `reason` one of Apple's documented
/// reasons, `unknown` (a reason Apple added since), `none` (no reason in the answer), or for no answer `timeout`,
/// `connection_lost` or `error`. Never a device token or an `apns-id`.
struct APNsMetrics: Sendable {
    static let descriptions: [MetricDescription] = [
        .init(
            "herald_provider_request_duration_seconds", .histogram, labels: ["provider"],
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
            help: "Time from sending one request to a push provider to its answer (or its failure)."),
        .init(
            "herald_provider_responses_total", .counter, labels: ["provider", "status", "reason"],
            help: "Requests to a push provider by HTTP status (none: no answer) and the provider's reason."),
    ]

    private let factory: any MetricsFactory
    private let duration: Timer
    private let accepted: Counter

    init(factory: any MetricsFactory) {
        self.factory = factory
        duration = Timer(label: "herald_provider_request_duration_seconds", dimensions: [("provider", "apns")], factory: factory)
        accepted = Self.responses(status: "200", reason: "none", factory: factory)
    }

    /// Records one request to APNs.
    func record(_ outcome: APNsAttemptOutcome, duration elapsed: Duration) {
        let (seconds, attoseconds) = elapsed.components
        duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let (status, reason) = Self.labels(of: outcome)
        if status == "200", reason == "none" {
            accepted.increment()
        } else {
            Self.responses(status: status, reason: reason, factory: factory).increment()
        }
    }

    /// The `status` and `reason` labels of an outcome.
    static func labels(of outcome: APNsAttemptOutcome) -> (status: String, reason: String) {
        switch outcome {
        case .answered(let response):
            let status = (100...599).contains(response.status) ? String(response.status) : "other"
            switch response.reason {
            case nil: return (status, "none")
            case .unknown: return (status, "unknown")
            case let reason?: return (status, reason.rawValue)
            }
        case .timedOut: return ("none", "timeout")
        case .connectionLost: return ("none", "connection_lost")
        case .failed: return ("none", "error")
        }
    }

    private static func responses(status: String, reason: String, factory: any MetricsFactory) -> Counter {
        Counter(
            label: "herald_provider_responses_total", dimensions: [("provider", "apns"), ("status", status), ("reason", reason)],
            factory: factory)
    }
}

extension APNsProvider {
    /// The metrics the APNs provider reports (help text and buckets for the exposition).
    public static var metricDescriptions: [MetricDescription] { APNsMetrics.descriptions }
}
