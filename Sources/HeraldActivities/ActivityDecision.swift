import Foundation
import HeraldCore
import Synchronization

/// One client change of one activity, decided on what the store read (``ActivityService/change(_:slug:of:mayCreate:)``):
/// first on the activity's row alone, which is all an update of an existing activity needs; a decision that needs
/// the count (a creation) or the other ongoing activities (a start, which may evict) throws ``NeedsNeighbourhood``
/// and is made again on the ``ActivityNeighbourhood``. Pure: the store may call it more than once.
struct ActivityDecision: Sendable {
    /// The decision needs the device's count or its other ongoing activities: made again on the neighbourhood.
    struct NeedsNeighbourhood: Error {}

    let rules: ActivityRules
    let change: ActivityChange
    let slug: String
    let deviceID: Device.ID
    let mayCreate: Bool
    let canPushToStart: Bool
    let now: Date

    /// On the activity's row alone: an activity that is there and is not a tombstone, decided without the others.
    func onRecord(_ record: ActivityRecord?) throws -> (ActivityWrites, ActivityOutcome) {
        guard let record, !record.isTombstone, let existing = try? record.decodedActivity() else { throw NeedsNeighbourhood() }
        let askedForOthers = Mutex(false)
        let facts = ActivityDeviceFacts(
            readingOngoing: {
                askedForOthers.withLock { $0 = true }
                return []
            }, activityCount: 0, canPushToStart: canPushToStart)
        let outcome = try rules.apply(change, to: existing, device: facts, now: now)
        if askedForOthers.withLock({ $0 }) { throw NeedsNeighbourhood() }
        let writes = try ActivityService.writes(for: outcome, slug: slug, existing: record, others: [], deviceID: deviceID, now: now)
        return (writes, outcome)
    }

    /// On the neighbourhood: the count and the other ongoing activities (decoded when the rules ask for them).
    func onNeighbourhood(_ neighbourhood: ActivityNeighbourhood) throws -> (ActivityWrites, ActivityOutcome) {
        let existingRecord = neighbourhood.record
        let existing = existingRecord.flatMap { $0.isTombstone ? nil : try? $0.decodedActivity() }
        if existing == nil, !mayCreate, case .patch(_, _, upsert: true) = change { throw ActivityProblem.upsertForbidden }
        let others = neighbourhood.otherOngoing
        let facts = ActivityDeviceFacts(
            readingOngoing: { others.compactMap { try? $0.decodedActivity() } }, activityCount: neighbourhood.activityCount,
            canPushToStart: canPushToStart)
        let outcome = try rules.apply(change, to: existing, device: facts, now: now)
        let writes = try ActivityService.writes(
            for: outcome, slug: slug, existing: existingRecord, others: others, deviceID: deviceID, now: now)
        return (writes, outcome)
    }
}
