import Foundation
import HeraldCore
import Logging

/// PushWard's activities of each device, kept in the ``ActivityStore``: every client change is one read-modify-write
/// of the device's activities (``ActivityRules`` decide, the store writes the activity, its evictions and their
/// "to push" marks in one transaction), and the ``ActivityDispatcher`` is woken to push what changed.
///
/// ```swift
/// let outcome = try await service.change(.patch(slug: "oven", patch, upsert: false), slug: "oven", of: device, mayCreate: false)
/// ```
public struct ActivityService: Sendable {
    public let store: any ActivityStore & DeviceStore
    public let rules: ActivityRules
    public let clock: any WallClock
    public let logger: Logger
    /// Called after a change that has something to push, with the activities it changed (``ActivityDispatcher/wake(_:)``).
    let wake: @Sendable ([ActivityKey]) -> Void
    /// Called when a change leaves an activity settled for an approval card's long polls
    /// (`GET /activities/{slug}?wait=N`, ``ApprovalRules/isSettled(_:)``).
    let settled: @Sendable (ActivityKey) -> Void

    public init(
        store: any ActivityStore & DeviceStore, rules: ActivityRules = ActivityRules(), clock: any WallClock,
        logger: Logger = Logger(label: "herald.activities"), settled: @escaping @Sendable (ActivityKey) -> Void = { _ in },
        wake: @escaping @Sendable ([ActivityKey]) -> Void
    ) {
        self.store = store
        self.rules = rules
        self.clock = clock
        self.logger = logger
        self.settled = settled
        self.wake = wake
    }

    /// The device's activities (tombstones left out), sorted by slug; a row whose document cannot be read is left out.
    public func activities(of device: Device) async throws(ActivityProblem) -> [Activity] {
        let records = try await storeCall { try await store.activities(deviceID: device.id) }
        return records.filter { !$0.isTombstone }.compactMap { try? $0.decodedActivity() }
    }

    /// One activity; 404 `activity.not_found` when there is none.
    public func activity(_ slug: String, of device: Device) async throws(ActivityProblem) -> Activity {
        let record = try await storeCall { try await store.activity(deviceID: device.id, slug: slug) }
        guard let record, !record.isTombstone, let activity = try? record.decodedActivity() else { throw .notFound }
        return activity
    }

    /// Applies a client's change to the activity `slug` of `device`. `mayCreate`: whether the caller may create an
    /// activity (PATCH `?upsert=true` for a missing slug needs `activity:manage`, else 403 `activity.upsert_forbidden`).
    ///
    /// A change of an activity that exists reads and compares its row alone (``ActivityStore/changeActivityRecord``):
    /// only a creation (the count against the 50) and a start (the eviction candidates) need more, and a decision that
    /// asks for either is made again on the neighbourhood: the activity, the device's other ongoing ones (decoded
    /// only then) and the count from the store's columns (``ActivityNeighbourhood``).
    public func change(_ change: ActivityChange, slug: String, of device: Device, mayCreate: Bool = true) async throws(ActivityProblem)
        -> ActivityOutcome
    {
        let decision = ActivityDecision(
            rules: rules, change: change, slug: slug, deviceID: device.id, mayCreate: mayCreate, canPushToStart: device.pushToStartToken != nil,
            now: clock.now())
        let outcome: ActivityOutcome = try await storeCall {
            do {
                return try await store.changeActivityRecord(deviceID: device.id, slug: slug) { record in try decision.onRecord(record) }
            } catch is ActivityDecision.NeedsNeighbourhood {
                return try await store.changeActivity(deviceID: device.id, slug: slug) { neighbourhood in
                    try decision.onNeighbourhood(neighbourhood)
                }
            }
        }
        if outcome.push != nil || !outcome.evictions.isEmpty {
            let evicted = outcome.evictions.map { ActivityKey(deviceID: device.id, slug: $0.activity.slug) }
            wake((outcome.push != nil ? [ActivityKey(deviceID: device.id, slug: slug)] : []) + evicted)
        }
        if ApprovalRules.isSettled(outcome.activity) { settled(ActivityKey(deviceID: device.id, slug: slug)) }
        return outcome
    }

    /// What an outcome writes: the activity (or its tombstone, or its deletion) and each evicted activity (one of
    /// `others`) with its end push. Throws when an activity cannot be encoded: nothing is written then.
    static func writes(
        for outcome: ActivityOutcome, slug: String, existing: ActivityRecord?, others: [ActivityRecord], deviceID: Device.ID, now: Date
    ) throws -> ActivityWrites {
        var writes = ActivityWrites()
        if let activity = outcome.activity {
            let base = try existing ?? .new(activity, deviceID: deviceID)
            writes.upserts.append(try base.recording(activity, push: outcome.push, now: now))
        } else if let existing {
            if let push = outcome.push, let activity = try? existing.decodedActivity() {
                // Deleted while ongoing: the end push still has to go out; the row stays as a tombstone until then.
                var tombstone = try existing.recording(activity, push: push, now: now)
                tombstone.state = ActivityRecord.tombstoneState
                tombstone.nextDueAt = nil
                writes.upserts.append(tombstone)
            } else {
                writes.deletions.append(slug)
            }
        }
        for eviction in outcome.evictions {
            guard let evicted = others.first(where: { $0.slug == eviction.activity.slug }) else { continue }
            writes.upserts.append(try evicted.recording(eviction.activity, push: eviction.push, now: now))
        }
        return writes
    }

    /// `PUT /api/push/activities/{slug}/token`: the update token ActivityKit issued for the activity on the device.
    /// What waited for it is due at once. 404 when the device has no such activity.
    public func setUpdateToken(_ token: String, slug: String, of device: Device) async throws(ActivityProblem) {
        let now = clock.now()
        let found: Bool = try await storeCall {
            try await store.changeActivity(deviceID: device.id, slug: slug) { neighbourhood in
                guard var record = neighbourhood.record else { return (ActivityWrites(), false) }
                record.updateToken = token
                if record.pushedState == nil, !record.isTombstone, record.state == ActivityState.ongoing.rawValue {
                    record.pushedState = ActivityState.ongoing.rawValue  // the app started it (push-to-start or locally)
                }
                if record.hasUnpushedChange { record.pushDueAt = now }
                return (ActivityWrites(upserts: [record]), true)
            }
        }
        guard found else { throw .notFound }
        wake([ActivityKey(deviceID: device.id, slug: slug)])
    }

    /// `DELETE /api/push/activities/{slug}/token`: the user dismissed the activity. Herald stops pushing to it and
    /// marks it ended (nothing to push: the device has none left). 404 when the device has no such activity.
    public func dismiss(slug: String, of device: Device) async throws(ActivityProblem) {
        let now = clock.now()
        let found: Bool = try await storeCall {
            try await store.changeActivity(deviceID: device.id, slug: slug) { neighbourhood in
                guard var record = neighbourhood.record else { return (ActivityWrites(), false) }
                if record.isTombstone { return (ActivityWrites(deletions: [slug]), true) }
                var activity = try record.decodedActivity()
                if activity.state == .ongoing {
                    activity.state = .ended
                    activity.endedAt = activity.endedAt ?? now
                    activity.updatedAt = now
                }
                record = try record.recording(activity, push: nil, now: now)
                record.updateToken = nil
                record.pushedState = nil
                record.pushedVersion = record.version
                record.pendingPush = nil
                record.pushDueAt = nil
                return (ActivityWrites(upserts: [record]), true)
            }
        }
        guard found else { throw .notFound }
        settled(ActivityKey(deviceID: device.id, slug: slug))
    }

    /// Runs a store call; an ``ActivityProblem`` the rules threw goes through, an activity that cannot be encoded is
    /// 422 naming the member (nothing was written), any other failure is
    /// answered 503 with the store's error as its ``ActivityProblem/cause`` (logged with the answer).
    func storeCall<Value: Sendable>(_ call: () async throws -> Value) async throws(ActivityProblem) -> Value {
        do {
            return try await call()
        } catch let problem as ActivityProblem {
            throw problem
        } catch let error as EncodingError {
            throw Self.problem(error)
        } catch {
            // Logged with the answer, as every store failure is (HeraldServer's error-cause log).
            throw .serviceUnavailable(cause: "\(error)")
        }
    }

    /// 422 `activity.content_invalid` at the member the encoder could not write (`body.content.progress`).
    static func problem(_ error: EncodingError) -> ActivityProblem {
        guard case .invalidValue(_, let context) = error else { return .contentInvalid("the activity cannot be stored") }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        let member = path.hasPrefix(".content") ? "body" + path : "body.content"
        return .contentInvalid("\(member.dropFirst(5)) cannot be stored: \(context.debugDescription)", location: member)
    }
}
