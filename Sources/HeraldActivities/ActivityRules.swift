import Foundation
import HeraldCore

/// PushWard's activity rules, pure: a change and the facts the store read go in, the changed activity, the push to
/// send and the evictions come out. `now` is passed in; nothing here reads a clock, a socket or a database.
///
/// ```swift
/// let rules = ActivityRules()
/// let outcome = try rules.apply(.patch(slug: "oven", patch, upsert: false), to: stored, device: facts, now: now)
/// // store outcome.activity and outcome.evictions, then send outcome.push and each eviction's push
/// ```
public struct ActivityRules: Sendable {
    /// Most activities one device may hold (PushWard: 50).
    public var maximumActivities: Int
    /// Most ongoing activities per device; one more evicts the lowest priority, then the oldest update (iOS: 5).
    public var maximumOngoing: Int
    /// How long an ended (or preempted) activity without `ended_ttl` is kept after its last change (30 days).
    public var endedRetention: TimeInterval
    /// How long iOS shows an ended card at most, and the default linger (4 h).
    public var maximumLinger: TimeInterval

    public init(maximumActivities: Int = 50, maximumOngoing: Int = 5, endedRetention: TimeInterval = 2_592_000, maximumLinger: TimeInterval = 14_400) {
        self.maximumActivities = maximumActivities
        self.maximumOngoing = maximumOngoing
        self.endedRetention = endedRetention
        self.maximumLinger = maximumLinger
    }

    /// Applies a client's change to the stored activity (`nil` when the slug does not exist for the device).
    ///
    /// Throws the problem the API answers: 404 for a missing slug (PATCH without upsert, DELETE, snooze), 409 at the
    /// device's activity limit or without a push-to-start token on a start, 400/422 for a patch the rules refuse.
    public func apply(_ change: ActivityChange, to existing: Activity?, device: ActivityDeviceFacts, now: Date) throws(ActivityProblem)
        -> ActivityOutcome
    {
        switch change {
        case .create(let request):
            return try create(request, existing: existing, device: device, now: now)
        case .patch(let slug, let patch, let upsert):
            if let existing { return try self.patch(existing, with: patch, action: .updated, device: device, now: now) }
            guard upsert else { throw .notFound }
            try ActivitySlug.validate(slug)
            guard device.activityCount < maximumActivities else { throw .limitExceeded(maximum: maximumActivities) }
            let created = Activity(slug: slug, name: slug, createdAt: now)
            return try self.patch(created, with: patch, action: .created, device: device, now: now)
        case .delete:
            guard let existing else { throw .notFound }
            guard existing.state == .ongoing else { return ActivityOutcome(activity: nil, action: .deleted, deleted: existing) }
            // Force-dismissed at once: a dismissal date in the past.
            let push = ActivityPush(event: .end, dismissalDate: now.addingTimeInterval(-1))
            return ActivityOutcome(activity: nil, action: .deleted, push: push, deleted: existing)
        case .snooze(let seconds):
            guard let existing else { throw .notFound }
            return try snooze(existing, by: seconds, now: now)
        }
    }

    /// Runs a server-managed behaviour that fell due: the countdown's warning or end, the stale end, the deletion
    /// after `delete_at`. `nil` when `due` is no longer what is due for the activity as it is now (changed since).
    public func run(_ due: ActivityDue, on activity: Activity, now: Date) -> ActivityOutcome? {
        guard let current = ActivitySchedule.nextDue(of: activity, rules: self), current.kind == due.kind, current.at <= now else { return nil }
        var changed = activity
        switch due.kind {
        case .countdownWarning:
            changed.content["accent_color"] = "orange"
            changed.content["warning_pushed"] = true
            changed.memory.countdownWarningSent = true
            let endDate = changed.content["end_date"]?.integerValue ?? Int(now.timeIntervalSince1970)
            // Clamped first: a row stored before dates were bounded can hold any end_date.
            let secondsLeft = min(max(endDate, 0), ActivityLimits.latestUnixSeconds) - Int(now.timeIntervalSince1970)
            let minutes = max(0, (secondsLeft + 59) / 60)
            let alert = ActivityAlert(title: activity.name, body: minutes == 1 ? "1 minute left" : "\(minutes) minutes left")
            let push = ActivityPush(event: .update, alert: alert, sound: "default", staleDate: staleDate(of: changed, now: now), isAlerting: true)
            return ActivityOutcome(activity: changed, action: .updated, push: push)
        case .countdownEnd:
            let message = changed.content["completion_message"]?.stringValue ?? "Completed"
            changed.content["state"] = .string(message)
            changed.content["progress"] = .double(1)
            end(&changed, now: now)
            let alert = ActivityAlert(title: activity.name, body: message)
            let push = ActivityPush(event: .end, alert: alert, sound: "default", dismissalDate: dismissalDate(of: changed, now: now), isAlerting: true)
            return ActivityOutcome(activity: changed, action: .updated, push: push)
        case .staleEnd:
            changed.content["state"] = "Stale (auto-ended)"
            changed.content["accent_color"] = "#8E8E93"
            changed.content["icon"] = "clock.badge.xmark"
            if changed.content["template"] == nil { changed.content["template"] = "generic" }
            end(&changed, now: now)
            return ActivityOutcome(activity: changed, action: .updated, push: ActivityPush(event: .end, dismissalDate: dismissalDate(of: changed, now: now)))
        case .endedExpiry:
            return ActivityOutcome(activity: nil, action: .deleted, deleted: activity)
        case .approvalEnd, .approvalExpiry:
            return runApproval(due.kind, on: activity, now: now)
        }
    }

    // MARK: POST

    func create(_ request: ActivityCreateRequest, existing: Activity?, device: ActivityDeviceFacts, now: Date) throws(ActivityProblem)
        -> ActivityOutcome
    {
        guard var activity = existing else {
            guard device.activityCount < maximumActivities else { throw .limitExceeded(maximum: maximumActivities) }
            let created = Activity(
                slug: request.slug, name: request.name, priority: request.priority ?? 0, endedTTL: request.endedTTL, staleTTL: request.staleTTL,
                dismissalTTL: request.dismissalTTL, createdAt: now)
            return ActivityOutcome(activity: created, action: .created)
        }
        // A refresh: name, priority and the TTLs sent; state and content are kept.
        activity.name = request.name
        if let priority = request.priority { activity.priority = priority }
        if let endedTTL = request.endedTTL { activity.endedTTL = endedTTL }
        if let staleTTL = request.staleTTL { activity.staleTTL = staleTTL }
        if let dismissalTTL = request.dismissalTTL { activity.dismissalTTL = dismissalTTL }
        activity.updatedAt = now
        return ActivityOutcome(activity: activity, action: .updated)
    }

    // MARK: PATCH

    func patch(_ stored: Activity, with patch: ActivityPatch, action: ActivityAction, device: ActivityDeviceFacts, now: Date) throws(ActivityProblem)
        -> ActivityOutcome
    {
        let target: ActivityState
        switch (patch.state, stored.state) {
        case (.ongoing?, _): target = .ongoing
        case (.ended?, _): target = .ended
        case (nil, .preempted):
            throw ActivityProblem(
                code: .activityStateInvalid, status: 400, detail: "the activity was preempted: set state to ongoing or ended explicitly")
        case (nil, let current): target = current
        }
        var activity = stored
        if let priority = patch.priority { activity.priority = priority }
        activity.endedTTL = patch.endedTTL.applied(to: activity.endedTTL)
        activity.staleTTL = patch.staleTTL.applied(to: activity.staleTTL)
        activity.dismissalTTL = patch.dismissalTTL.applied(to: activity.dismissalTTL)
        if let contentPatch = patch.content {
            try ActivityContent.apply(contentPatch, to: &activity, now: now)
        }
        activity.updatedAt = now
        if patch.content != nil { try checkFits(activity, now: now) }
        let starts = target == .ongoing && stored.state != .ongoing
        if starts, !device.canPushToStart { throw .pushToStartUnavailable }

        switch (stored.state, target) {
        case (.ongoing, .ongoing):
            let alert = patch.sound.map { _ in startAlert(for: activity) }
            let push = ActivityPush(
                event: .update, alert: alert, sound: patch.sound, staleDate: staleDate(of: activity, now: now), isAlerting: patch.sound != nil)
            return ActivityOutcome(activity: activity, action: action, push: push)
        case (_, .ongoing):
            activity.state = .ongoing
            activity.deleteAt = nil
            activity.memory.countdownWarningSent = false
            activity.content["warning_pushed"] = nil
            let push = ActivityPush(
                event: .start, alert: startAlert(for: activity), sound: patch.sound, staleDate: staleDate(of: activity, now: now),
                isAlerting: true)
            return ActivityOutcome(activity: activity, action: action, push: push, evictions: evictions(besides: activity, device: device, now: now))
        case (.ongoing, _):
            end(&activity, now: now)
            return ActivityOutcome(activity: activity, action: action, push: ActivityPush(event: .end, dismissalDate: dismissalDate(of: activity, now: now)))
        case (_, _):
            // ended → ended, preempted → ended: nothing is on the phone to push to.
            if stored.state == .preempted { end(&activity, now: now) }
            return ActivityOutcome(activity: activity, action: action)
        }
    }

    // MARK: Snooze

    func snooze(_ stored: Activity, by seconds: Int?, now: Date) throws(ActivityProblem) -> ActivityOutcome {
        if let seconds, !(60...3_600).contains(seconds) {
            throw .fieldInvalid("snooze seconds must be between 60 and 3600, got \(seconds)", location: "body.seconds")
        }
        guard stored.state == .ongoing, let endDate = stored.content["end_date"]?.integerValue else {
            throw .contentInvalid("only an ongoing activity with an end_date can be snoozed", location: "body.content.end_date")
        }
        // A stored snooze_seconds is 60–3600 since it was checked; an older row's is clamped into that range.
        let extension_ = seconds ?? stored.content["snooze_seconds"]?.integerValue.map { min(max($0, 60), 3_600) } ?? 300
        let nowSeconds = Int(now.timeIntervalSince1970)
        let newEnd = try ActivityLimits.adding(extension_, to: max(endDate, nowSeconds), location: "body.seconds")
        var activity = stored
        activity.content["end_date"] = .int(newEnd)
        activity.content["snoozed_until"] = .int(newEnd)
        if let threshold = activity.content["warning_threshold"]?.integerValue {
            activity.memory.countdownWarningSent = newEnd - min(max(threshold, 0), newEnd) <= nowSeconds  // cannot overflow
            if activity.memory.countdownWarningSent {
                activity.content["warning_pushed"] = true
            } else {
                activity.content.removeValue(forKey: "warning_pushed")
            }
        }
        activity.updatedAt = now
        let push = ActivityPush(event: .update, staleDate: staleDate(of: activity, now: now))
        return ActivityOutcome(activity: activity, action: .updated, push: push)
    }

    // MARK: Shared steps

    /// Moves an activity to `ended`: clears `alarm`, `snoozed_until` and `warning_pushed`, stamps `ended_at` once and
    /// `delete_at` from `ended_ttl`.
    func end(_ activity: inout Activity, now: Date) {
        activity.state = .ended
        activity.content["alarm"] = nil
        activity.content["snoozed_until"] = nil
        activity.content["warning_pushed"] = nil
        activity.memory.countdownWarningSent = false
        activity.endedAt = activity.endedAt ?? now
        activity.deleteAt = activity.endedTTL.map { now.addingTimeInterval(TimeInterval($0)) }
        activity.updatedAt = now
    }

    /// The others to evict so that the device has at most ``maximumOngoing`` ongoing with `started` among them:
    /// lowest priority first, then the oldest update. The one starting is never evicted (it starts "to make room").
    func evictions(besides started: Activity, device: ActivityDeviceFacts, now: Date) -> [ActivityEviction] {
        let others = device.ongoing.filter { $0.slug != started.slug && $0.state == .ongoing }
        let excess = others.count + 1 - maximumOngoing
        guard excess > 0 else { return [] }
        let order = others.sorted { ($0.priority, $0.updatedAt, $0.slug) < ($1.priority, $1.updatedAt, $1.slug) }
        return order.prefix(excess).map { victim in
            var preempted = victim
            preempted.state = .preempted
            preempted.updatedAt = now
            // Preempted cards keep the ended_ttl-derived linger even when dismissal_ttl is set.
            let linger = preempted.endedTTL.map { min(TimeInterval($0), maximumLinger) } ?? maximumLinger
            return ActivityEviction(activity: preempted, push: ActivityPush(event: .end, dismissalDate: now.addingTimeInterval(linger)))
        }
    }

    /// Refuses content whose largest push (a start, with its alert) cannot fit 4096 bytes even reduced: 422.
    /// A timeline's history is left out of the trial: it can always shrink to nothing.
    func checkFits(_ activity: Activity, now: Date) throws(ActivityProblem) {
        var activity = activity
        activity.content["history"] = nil
        if activity.template == .approval { activity.memory.approvalAnswer = ApprovalRules.longestAnswer(of: activity, now: now) }
        let push = ActivityPush(event: .start, alert: startAlert(for: activity), sound: "notification", staleDate: now, isAlerting: true)
        let timestamp = LiveActivityTimestamp.seconds(now)
        let largest = LiveActivityPayload.unfitted(
            activity: activity, push: push, timestamp: timestamp, attributesType: LiveActivityPayload.defaultAttributesType)
        // Most content is far below the limit: its size bound says so without an encoding.
        if LiveActivityPayload.fitsWithoutEncoding(largest) { return }
        do {
            _ = try LiveActivityPayload.render(activity: activity, push: push, timestamp: timestamp, now: now)
        } catch {
            throw .contentInvalid("content does not fit the 4096-byte APNs payload (\(error.bytes) bytes)", location: "body.content")
        }
    }

    /// `stale-date`: now + `stale_ttl`, while the activity has one.
    func staleDate(of activity: Activity, now: Date) -> Date? {
        activity.staleTTL.map { now.addingTimeInterval(TimeInterval($0)) }
    }

    /// `dismissal-date` of an end: `dismissal_ttl` when set, else `ended_ttl` capped at 4 h, else 4 h.
    func dismissalDate(of activity: Activity, now: Date) -> Date {
        if let dismissal = activity.dismissalTTL { return now.addingTimeInterval(TimeInterval(dismissal)) }
        return now.addingTimeInterval(activity.endedTTL.map { min(TimeInterval($0), maximumLinger) } ?? maximumLinger)
    }

    /// The start (and alerting update) alert: the activity's name over its content's `state`, else `subtitle`.
    func startAlert(for activity: Activity) -> ActivityAlert {
        let body = activity.content["state"]?.stringValue ?? activity.content["subtitle"]?.stringValue ?? ""
        return ActivityAlert(title: activity.name, body: body)
    }
}

extension JSONValue {
    /// The value as an integer, if it is one (a double with an integral value counts).
    var integerValue: Int? {
        switch self {
        case .int(let value): value
        case .double(let value) where value == value.rounded() && abs(value) < 9e18: Int(value)
        default: nil
        }
    }
}
