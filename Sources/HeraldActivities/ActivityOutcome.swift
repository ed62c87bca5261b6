import Foundation
import HeraldCore

/// A change a client asks of one activity (the activity paths of PushWard's API).
public enum ActivityChange: Sendable, Equatable {
    /// `POST /activities`: create, or refresh name, priority and TTLs (state and content are kept).
    case create(ActivityCreateRequest)
    /// `PATCH /activities/{slug}[?upsert=true]`; with `upsert` a missing slug is created first (name = slug).
    case patch(slug: String, ActivityPatch, upsert: Bool)
    /// `DELETE /activities/{slug}`: an ongoing activity is ended on the phone at once (dismissal date in the past).
    case delete
    /// `POST /activities/{slug}/snooze`: moves a countdown's `end_date` by `seconds`, or by its `snooze_seconds`
    /// (default 300) when `nil`.
    case snooze(seconds: Int?)
}

/// What the rules know about the device that owns the activity, read by the store in the same transaction.
public struct ActivityDeviceFacts: Sendable {
    /// Reads the other ongoing activities; called only by a change that starts one (the eviction candidates), so
    /// that an update does not decode the device's other documents.
    private let readOngoing: @Sendable () -> [Activity]
    /// How many activities the device holds in all (the one being changed included when it exists).
    public var activityCount: Int
    /// Whether the device has a push-to-start token (else a transition to `ongoing` is 409).
    public var canPushToStart: Bool

    public init(ongoing: [Activity] = [], activityCount: Int = 0, canPushToStart: Bool = true) {
        self.init(readingOngoing: { ongoing }, activityCount: activityCount, canPushToStart: canPushToStart)
    }

    /// Facts whose ongoing activities are read when they are first needed (``ongoing``).
    public init(readingOngoing: @escaping @Sendable () -> [Activity], activityCount: Int, canPushToStart: Bool) {
        self.readOngoing = readingOngoing
        self.activityCount = activityCount
        self.canPushToStart = canPushToStart
    }

    /// The device's other ongoing activities (the one being changed left out).
    public var ongoing: [Activity] { readOngoing() }
}

/// The answer's `X-Resource-Action`, or that the activity is gone.
public enum ActivityAction: String, Sendable, Equatable {
    case created
    case updated
    case deleted
}

/// The `aps.event` of a Live Activity push.
public typealias ActivityEvent = LiveActivityMessage.Event

/// The alert of a Live Activity push (`aps.alert`).
public struct ActivityAlert: Sendable, Equatable, Codable {
    public var title: String
    public var body: String

    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }
}

/// One Live Activity push to send for an activity: which event, whether it alerts, and the dates the payload carries.
///
/// The content pushed is the activity's content at render time (``LiveActivityPayload``); the push itself is what
/// the rules decided about this change.
public struct ActivityPush: Sendable, Equatable, Codable {
    public var event: ActivityEvent
    /// Shown on the Lock Screen with ``sound`` (start pushes, alerting updates, server warnings).
    public var alert: ActivityAlert?
    /// `aps.sound`: the PATCH's `sound`, or `default` for a start and a countdown warning.
    public var sound: String?
    /// `aps.stale-date`: now + `stale_ttl` while ongoing.
    public var staleDate: Date?
    /// `aps.dismissal-date` (end pushes only).
    public var dismissalDate: Date?
    /// Whether this update was asked to alert (a PATCH with `sound`, or a server-managed warning).
    public var isAlerting: Bool

    public init(
        event: ActivityEvent, alert: ActivityAlert? = nil, sound: String? = nil, staleDate: Date? = nil, dismissalDate: Date? = nil, isAlerting: Bool = false
    ) {
        self.event = event
        self.alert = alert
        self.sound = sound
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.isAlerting = isAlerting
    }

    /// `apns-priority`: high (10) for start, end and alerting updates; normal (5) for a silent update.
    public var apnsPriority: NotificationPriority { event == .update && !isAlerting ? .normal : .high }
}

/// An activity evicted to `preempted` to make room, with the end push that takes it off the phone.
public struct ActivityEviction: Sendable, Equatable {
    public var activity: Activity
    public var push: ActivityPush

    public init(activity: Activity, push: ActivityPush) {
        self.activity = activity
        self.push = push
    }
}

/// What one change (or one server-managed due) does.
public struct ActivityOutcome: Sendable, Equatable {
    /// The activity after the change; `nil` when it was deleted.
    public var activity: Activity?
    /// `created` / `updated` for the answer's `X-Resource-Action`, or `deleted`.
    public var action: ActivityAction
    /// The push to send for this activity, if any (none for a change to an ended activity, or a POST refresh).
    public var push: ActivityPush?
    /// Other activities of the device evicted to `preempted` by this change, each with its end push.
    public var evictions: [ActivityEviction]
    /// The activity as it was, when it was deleted: the `end` push of a `DELETE` renders from it.
    public var deleted: Activity?

    public init(
        activity: Activity?, action: ActivityAction, push: ActivityPush? = nil, evictions: [ActivityEviction] = [], deleted: Activity? = nil
    ) {
        self.activity = activity
        self.action = action
        self.push = push
        self.evictions = evictions
        self.deleted = deleted
    }

    /// The activity `push` renders from: the changed one, or the deleted one.
    public var pushedActivity: Activity? { activity ?? deleted }

    /// The next server-managed thing due for the activity (``ActivitySchedule/nextDue(of:)``), `nil` when none.
    public var nextDue: ActivityDue? { activity.flatMap(ActivitySchedule.nextDue(of:)) }
}

/// A server-managed behaviour due at a time.
public struct ActivityDue: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Equatable, Codable {
        /// `countdown`: the warning update at `end_date - warning_threshold`.
        case countdownWarning = "countdown_warning"
        /// `countdown`: the end push with `completion_message` at `end_date`.
        case countdownEnd = "countdown_end"
        /// `stale_ttl` seconds without an update while ongoing: ended as stale.
        case staleEnd = "stale_end"
        /// `delete_at` reached: the activity is deleted.
        case endedExpiry = "ended_expiry"
        /// `approval`: answered ``ApprovalRules/endDelay`` ago, the card is ended.
        case approvalEnd = "approval_end"
        /// `approval`: `end_date` passed unanswered; `on_expire` is taken (when set) and the card is ended.
        case approvalExpiry = "approval_expiry"
    }

    public var kind: Kind
    public var at: Date

    public init(kind: Kind, at: Date) {
        self.kind = kind
        self.at = at
    }
}
