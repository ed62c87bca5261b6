import Foundation
import HeraldCore

/// When an activity's next server-managed behaviour falls due, so that the scheduler (in the store, so that it
/// survives restarts and runs once across instances) can wake for it and call ``ActivityRules/run(_:on:now:)``.
///
/// - ongoing: the earliest of the countdown warning (`end_date - warning_threshold`, once per `end_date`), the
///   countdown end (`end_date`), an approval card's end (``ApprovalRules/endDelay`` after its answer) or expiry
///   (`end_date` unanswered), and the stale end (`updated_at + stale_ttl`);
/// - ended or preempted: the deletion at `delete_at`, or 30 days after the last change without `ended_ttl`.
public enum ActivitySchedule {
    /// The next thing due for `activity`, `nil` when nothing is.
    public static func nextDue(of activity: Activity) -> ActivityDue? {
        nextDue(of: activity, rules: ActivityRules())
    }

    /// As ``nextDue(of:)``, with the retention of `rules`.
    public static func nextDue(of activity: Activity, rules: ActivityRules) -> ActivityDue? {
        switch activity.state {
        case .ended, .preempted:
            let at = activity.deleteAt ?? activity.updatedAt.addingTimeInterval(rules.endedRetention)
            return ActivityDue(kind: .endedExpiry, at: at)
        case .ongoing:
            var candidates: [ActivityDue] = []
            if activity.template == .countdown, let endDate = activity.content["end_date"]?.integerValue {
                let end = Date(timeIntervalSince1970: TimeInterval(endDate))
                if let threshold = activity.content["warning_threshold"]?.integerValue, threshold > 0, !activity.memory.countdownWarningSent {
                    candidates.append(ActivityDue(kind: .countdownWarning, at: end.addingTimeInterval(-TimeInterval(threshold))))
                }
                candidates.append(ActivityDue(kind: .countdownEnd, at: end))
            }
            if activity.template == .approval, let due = ApprovalRules.nextDue(of: activity) { candidates.append(due) }
            if let staleTTL = activity.staleTTL {
                candidates.append(ActivityDue(kind: .staleEnd, at: activity.updatedAt.addingTimeInterval(TimeInterval(staleTTL))))
            }
            // The earliest; on a tie the countdown's own end before the stale end, the warning before both.
            return candidates.min { $0.at < $1.at }
        }
    }
}
