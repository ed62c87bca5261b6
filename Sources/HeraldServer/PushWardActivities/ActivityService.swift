import Foundation
import HeraldActivities
import HeraldCore
import Logging

/// PushWard's activities of each device, kept in the ``ActivityStore``: every client change is one read-modify-write
/// of the device's activities (``ActivityRules`` decide, the store writes the activity, its evictions and their
/// "to push" marks in one transaction), and the ``ActivityDispatcher`` is woken to push what changed.
///
/// ```swift
/// let outcome = try await service.change(.patch(slug: "oven", patch, upsert: false), slug: "oven", of: device, mayCreate: false)
/// ```
struct ActivityService: Sendable {
    let store: any HeraldStore
    let rules: ActivityRules
    let clock: any WallClock
    /// Called after a change that has something to push.
    let wake: @Sendable () -> Void

    init(store: any HeraldStore, rules: ActivityRules = ActivityRules(), clock: any WallClock, wake: @escaping @Sendable () -> Void) {
        self.store = store
        self.rules = rules
        self.clock = clock
        self.wake = wake
    }

    /// The device's activities (tombstones left out), sorted by slug.
    func activities(of device: Device) async throws(ActivityProblem) -> [Activity] {
        let records = try await storeCall { try await store.activities(deviceID: device.id) }
        return records.filter { !$0.isTombstone }.compactMap { try? $0.decodedActivity() }
    }

    /// One activity; 404 `activity.not_found` when there is none.
    func activity(_ slug: String, of device: Device) async throws(ActivityProblem) -> Activity {
        let record = try await storeCall { try await store.activity(deviceID: device.id, slug: slug) }
        guard let record, !record.isTombstone, let activity = try? record.decodedActivity() else { throw .notFound }
        return activity
    }

    /// Applies a client's change to the activity `slug` of `device`. `mayCreate`: whether the caller may create an
    /// activity (PATCH `?upsert=true` for a missing slug needs `activity:manage`, else 403 `activity.upsert_forbidden`).
    func change(_ change: ActivityChange, slug: String, of device: Device, mayCreate: Bool = true) async throws(ActivityProblem)
        -> ActivityOutcome
    {
        let now = clock.now()
        let rules = rules
        let canPushToStart = device.pushToStartToken != nil
        let outcome: ActivityOutcome = try await storeCall {
            try await store.changeActivities(deviceID: device.id) { records in
                let live = records.filter { !$0.isTombstone }
                let existingRecord = records.first { $0.slug == slug }
                let existing = existingRecord.flatMap { $0.isTombstone ? nil : try? $0.decodedActivity() }
                if existing == nil, !mayCreate, case .patch(_, _, upsert: true) = change { throw ActivityProblem.upsertForbidden }
                let others = live.filter { $0.slug != slug }.compactMap { try? $0.decodedActivity() }
                let facts = ActivityDeviceFacts(
                    ongoing: others.filter { $0.state == .ongoing }, activityCount: live.count,
                    canPushToStart: canPushToStart)
                let outcome = try ActivityService.apply(rules, change, to: existing, facts: facts, now: now)
                let writes = Self.writes(for: outcome, slug: slug, existing: existingRecord, records: records, deviceID: device.id, now: now)
                return (writes, outcome)
            }
        }
        if outcome.push != nil || !outcome.evictions.isEmpty { wake() }
        return outcome
    }

    /// The rules' typed error, through the store's untyped closure.
    private static func apply(
        _ rules: ActivityRules, _ change: ActivityChange, to existing: Activity?, facts: ActivityDeviceFacts, now: Date
    ) throws -> ActivityOutcome {
        try rules.apply(change, to: existing, device: facts, now: now)
    }

    /// What an outcome writes: the activity (or its tombstone, or its deletion) and each evicted activity with its end
    /// push.
    static func writes(
        for outcome: ActivityOutcome, slug: String, existing: ActivityRecord?, records: [ActivityRecord], deviceID: Device.ID, now: Date
    ) -> ActivityWrites {
        var writes = ActivityWrites()
        if let activity = outcome.activity {
            let base = existing ?? .new(activity, deviceID: deviceID)
            writes.upserts.append(base.recording(activity, push: outcome.push, now: now))
        } else if let existing {
            if let push = outcome.push, let activity = try? existing.decodedActivity() {
                // Deleted while ongoing: the end push still has to go out; the row stays as a tombstone until then.
                var tombstone = existing.recording(activity, push: push, now: now)
                tombstone.state = ActivityRecord.tombstoneState
                tombstone.nextDueAt = nil
                writes.upserts.append(tombstone)
            } else {
                writes.deletions.append(slug)
            }
        }
        for eviction in outcome.evictions {
            guard let evicted = records.first(where: { $0.slug == eviction.activity.slug }) else { continue }
            writes.upserts.append(evicted.recording(eviction.activity, push: eviction.push, now: now))
        }
        return writes
    }

    /// `PUT /api/push/activities/{slug}/token`: the update token ActivityKit issued for the activity on the device.
    /// What waited for it is due at once. 404 when the device has no such activity.
    func setUpdateToken(_ token: String, slug: String, of device: Device) async throws(ActivityProblem) {
        let now = clock.now()
        let found: Bool = try await storeCall {
            try await store.changeActivities(deviceID: device.id) { records in
                guard var record = records.first(where: { $0.slug == slug }) else { return (ActivityWrites(), false) }
                record.updateToken = token
                if record.pushedState == nil, !record.isTombstone, record.state == ActivityState.ongoing.rawValue {
                    record.pushedState = ActivityState.ongoing.rawValue  // the app started it (push-to-start or locally)
                }
                if record.hasUnpushedChange { record.pushDueAt = now }
                return (ActivityWrites(upserts: [record]), true)
            }
        }
        guard found else { throw .notFound }
        wake()
    }

    /// `DELETE /api/push/activities/{slug}/token`: the user dismissed the activity. Herald stops pushing to it and
    /// marks it ended (nothing to push: the device has none left). 404 when the device has no such activity.
    func dismiss(slug: String, of device: Device) async throws(ActivityProblem) {
        let now = clock.now()
        let found: Bool = try await storeCall {
            try await store.changeActivities(deviceID: device.id) { records in
                guard var record = records.first(where: { $0.slug == slug }) else { return (ActivityWrites(), false) }
                if record.isTombstone { return (ActivityWrites(deletions: [slug]), true) }
                var activity = try record.decodedActivity()
                if activity.state == .ongoing {
                    activity.state = .ended
                    activity.endedAt = activity.endedAt ?? now
                    activity.updatedAt = now
                }
                record = record.recording(activity, push: nil, now: now)
                record.updateToken = nil
                record.pushedState = nil
                record.pushedVersion = record.version
                record.pendingPush = nil
                record.pushDueAt = nil
                return (ActivityWrites(upserts: [record]), true)
            }
        }
        guard found else { throw .notFound }
    }

    /// Runs a store call; an ``ActivityProblem`` the rules threw goes through, any other failure is 503.
    private func storeCall<Value: Sendable>(_ call: () async throws -> Value) async throws(ActivityProblem) -> Value {
        do {
            return try await call()
        } catch let problem as ActivityProblem {
            throw problem
        } catch {
            throw .serviceUnavailable
        }
    }
}
