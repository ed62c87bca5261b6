import Foundation
import HeraldCore
import Logging

/// What the device is sent for an activity's changes not yet handed on: decided on the activity's row (its lease taken
/// in the same write), then handed to the send pipeline by the ``ActivityDispatcher``.
struct PreparedActivityPush: Sendable {
    var version: Int
    var push: ActivityPush
    var token: String
    var message: LiveActivityMessage
    /// How long the outbox tries it.
    var lifetime: TimeInterval
}

/// Decides the push of one activity's row (``ActivityDispatcher``): which event the device needs (start, update or end,
/// from what it was last sent), to which token, with the next `aps.timestamp`, and the lease that holds the activity
/// until the push's outcome is written. Pure but for the log line of a payload that does not fit.
struct ActivityPushDecider: Sendable {
    let attributesType: String
    /// The instance the lease names.
    let owner: String
    let leaseDuration: TimeInterval
    /// How long an activity push may wait in the outbox before it is dropped (a newer state is sent instead).
    let pushLifetime: TimeInterval
    let logger: Logger

    /// Decides the push of a held record and writes the decision into it: `nil` when there is none to send now.
    /// `earlierPending`: a push of the activity is still pending in the outbox (then only the next look is scheduled).
    /// A decided push leaves the activity due once its lease expires, so that a push lost with its instance (killed
    /// before it wrote the outcome) is claimed and sent again.
    func decide(_ record: inout ActivityRecord, device: Device, earlierPending: Bool, now: Date) -> PreparedActivityPush? {
        record.lease = nil
        if earlierPending {
            // After the earlier push: checked again in a second when a newer state waits, else when it may expire.
            record.pushDueAt = now.addingTimeInterval(record.hasUnpushedChange ? 1 : pushLifetime + 1)
            return nil
        }
        record.inFlightNotification = nil
        record.pushDueAt = nil
        guard record.hasUnpushedChange, let activity = try? record.decodedActivity() else { return nil }
        let ongoingOnDevice = record.pushedState == ActivityState.ongoing.rawValue
        let event: ActivityEvent?
        if record.isTombstone || activity.state != .ongoing {
            event = ongoingOnDevice ? .end : nil
        } else {
            event = ongoingOnDevice ? .update : .start
        }
        guard let event else {
            // Nothing the device needs (it never got the activity, or has it ended already).
            record.pushedVersion = record.version
            record.pendingPush = nil
            return nil
        }
        var push = record.decodedPendingPush ?? ActivityPush(event: event)
        push.event = event
        if event == .end, push.dismissalDate == nil { push.dismissalDate = now }
        guard let token = event == .start ? device.pushToStartToken : record.updateToken else {
            return nil  // waits for the token: its arrival makes the activity due
        }
        if event == .start { record.updateToken = nil }  // the new activity on the device reports its own
        let timestamp = LiveActivityTimestamp.next(after: record.pushedTimestamp, now: now)
        record.pushedTimestamp = timestamp
        do {
            let message = try LiveActivityPayload.message(
                activity: activity, push: push, timestamp: timestamp, attributesType: attributesType, now: now)
            let lease = Lease(owner: owner, expiresAt: now.addingTimeInterval(leaseDuration))
            record.lease = lease
            record.pushDueAt = lease.expiresAt
            return PreparedActivityPush(version: record.version, push: push, token: token, message: message, lifetime: pushLifetime)
        } catch {
            logger.error("An activity's payload does not fit", metadata: ["slug": "\(record.slug)", "bytes": "\(error.bytes)"])
            record.pushedVersion = record.version
            record.pendingPush = nil
            return nil
        }
    }
}
