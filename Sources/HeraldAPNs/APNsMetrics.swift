import CoreMetrics
import HeraldCore
import HeraldProviderKit

/// The APNs provider's labels for ``ProviderMetrics``: `reason` is one of Apple's documented reasons, `unknown` (a
/// reason Apple added since), `none` (no reason in the answer), or for no answer `timeout`, `connection_lost` or
/// `error`.
enum APNsMetrics {
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
        case .failed, .refusedLocally: return ("none", "error")
        }
    }
}

extension APNsAttemptOutcome: AttemptOutcome {
    var metricLabels: (status: String, reason: String) { APNsMetrics.labels(of: self) }

    var loggedStatus: String {
        if case .answered(let response) = self { "\(response.status)" } else { "none" }
    }
}
