import Foundation
import HeraldCore
import HeraldWebPush
import Logging

/// At start-up, before any delivery: every active Web Push device whose stored endpoint today's registration rules
/// refuse (``WebPushEgressPolicy/endpointProblem(_:)``: a known push service on a port other than 443, a port outside
/// 1–65,535, a host no longer listed in `HERALD_WEBPUSH_ALLOWED_HOSTS`) is deactivated, as a dead token is: it
/// receives nothing until it registers again. Logged once, with the count.
///
/// ```swift
/// let count = try await WebPushEndpointSweep.run(store: store, policy: policy, clock: clock, logger: logger)
/// ```
enum WebPushEndpointSweep {
    /// The reason a swept device shows (`inactive_reason`).
    static let reason = "Its Web Push endpoint is refused by the current rules; the browser must register again"

    /// Deactivates the refused endpoints' devices; returns how many.
    @discardableResult
    static func run(store: any HeraldStore, policy: WebPushEgressPolicy, clock: any WallClock, logger: Logger) async throws -> Int {
        let tokens = try await store.activeTokens(platform: .webpush)
        var count = 0
        var examples: [String] = []
        for (id, endpoint) in tokens {
            guard let problem = policy.endpointProblem(endpoint) else { continue }
            try await store.deactivateDevice(id: id, token: endpoint, reason: reason, at: clock.now())
            count += 1
            if examples.count < 3 { examples.append(problem) }
        }
        if count > 0 {
            logger.warning(
                "Web Push devices deactivated at start-up: their endpoints are refused by the current rules",
                metadata: ["count": "\(count)", "problems": "\(examples.joined(separator: "; "))"])
        }
        return count
    }
}
