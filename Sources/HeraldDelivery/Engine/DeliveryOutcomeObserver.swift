import Foundation
import HeraldCore

/// Told of each delivery outcome once the engine saved it (the one hook in ``DeliveryEngine``): the tokens' outcome
/// callbacks hang here. Called in the attempt's slot, after the outcome is durable; it must not take long.
public protocol DeliveryOutcomeObserver: Sendable {
    /// `notification` as saved, and the verdict of the attempt (retries and hand-overs included: the observer picks).
    func outcomeSaved(_ notification: PushNotification, verdict: AttemptVerdict) async
}
