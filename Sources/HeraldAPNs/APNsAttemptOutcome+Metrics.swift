import HeraldCore
import HeraldProviderKit

/// The APNs provider's labels for ``ProviderMetrics`` (counted by ``ProviderAttempts``): `reason` is one of Apple's
/// documented reasons, `unknown` (a reason Apple added since), `none` (no reason in the answer), or for no answer
/// `timeout`, `connection_lost` or `error`.
extension APNsAttemptOutcome: AttemptOutcome {
    var answeredStatus: Int? {
        if case .answered(let response) = self { response.status } else { nil }
    }

    var metricReason: String {
        switch self {
        case .answered(let response):
            switch response.reason {
            case nil: "none"
            case .unknown: "unknown"
            case let reason?: reason.rawValue
            }
        case .timedOut: "timeout"
        case .connectionLost: "connection_lost"
        case .failed, .refusedLocally: "error"
        }
    }
}
