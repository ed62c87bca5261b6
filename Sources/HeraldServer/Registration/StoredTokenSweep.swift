import Foundation
import HeraldCore
import HeraldProviderKit
import Logging

/// At start-up, before any delivery: for each provider whose rules check stored tokens again
/// (``PushAddressRules/storedTokenCheck``; Web Push: endpoints its egress rules now refuse), every active device whose
/// token today's rules refuse is deactivated, as a dead token is: it receives nothing until it registers again. Logged
/// once per provider, with the count.
///
/// ```swift
/// let count = try await StoredTokenSweep.run(store: store, providers: profiles, clock: clock, logger: logger)
/// ```
enum StoredTokenSweep {
    /// Deactivates the refused tokens' devices; returns how many.
    @discardableResult
    static func run(store: any HeraldStore, providers: ProviderProfiles, clock: any WallClock, logger: Logger) async throws -> Int {
        var total = 0
        for profile in providers.all {
            guard let check = profile.addressRules.storedTokenCheck else { continue }
            var count = 0
            var examples: [String] = []
            for (id, token) in try await store.activeTokens(platform: profile.platform) {
                guard let problem = check.problem(token) else { continue }
                try await store.deactivateDevice(id: id, token: token, reason: check.reason, at: clock.now())
                count += 1
                if examples.count < 3 { examples.append(problem) }
            }
            if count > 0 {
                logger.warning(
                    "\(profile.description.displayName) devices deactivated at start-up: their tokens are refused by the current rules",
                    metadata: ["count": "\(count)", "problems": "\(examples.joined(separator: "; "))"])
            }
            total += count
        }
        return total
    }
}
