import Foundation
import HeraldCore

/// The state of an activity (PushWard's state machine).
///
/// `ended` is the initial state. `ended → ongoing` starts the Live Activity (push-to-start), `ongoing → ongoing`
/// updates it, `ongoing → ended` ends it. `preempted` is set by the server only, when an activity is evicted to keep
/// a device at five ongoing activities; a client moves it back with an explicit `ongoing` or `ended`.
public enum ActivityState: String, Sendable, Codable, CaseIterable {
    case ongoing
    case ended
    case preempted
}

/// One PushWard activity of one device, with everything the server remembers about it.
///
/// Pure data: ``ActivityRules`` changes it, the store keeps it as one JSON document (``storedJSON()``), and
/// ``ActivityJSON`` writes it as the API answers it.
public struct Activity: Sendable, Equatable, Codable {
    /// Stable surrogate id (PushWard's `id`), set at creation.
    public var id: UUID
    /// The caller's key, unique per device (`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$`).
    public var slug: String
    /// Display name, 1–256 characters; also the `attributes.name` of the start push.
    public var name: String
    /// Eviction priority 0–10; also `relevance-score` (priority / 10).
    public var priority: Int
    /// Where it is in the state machine.
    public var state: ActivityState
    /// The stored content after the merge patches and the server-computed fields, `template` included; empty until
    /// the first patch that carries content (answered as `{"template":"generic"}`). It is the `content-state` pushed.
    public var content: JSONObject
    /// Seconds after ending before the server deletes the activity (1 s – 30 days).
    public var endedTTL: Int?
    /// Seconds without an update, while ongoing, before the server ends it (1 s – 30 days).
    public var staleTTL: Int?
    /// Seconds after ending before iOS removes the card from the Lock Screen (0 – 14 400).
    public var dismissalTTL: Int?
    /// When it was created.
    public var createdAt: Date
    /// When a client (or the server's own change) last changed it.
    public var updatedAt: Date
    /// Set when it first ended; kept on later transitions.
    public var endedAt: Date?
    /// When the server deletes it (from `ended_ttl`, or 30 days after the last change of an ended activity).
    public var deleteAt: Date?
    /// What the server keeps beside the content: timeline history, log backlog, countdown flags, APNs timestamps.
    public var memory: ActivityMemory

    public init(
        id: UUID = UUID.random(), slug: String, name: String, priority: Int = 0, state: ActivityState = .ended, content: JSONObject = [:],
        endedTTL: Int? = nil, staleTTL: Int? = nil, dismissalTTL: Int? = nil, createdAt: Date, updatedAt: Date? = nil, endedAt: Date? = nil,
        deleteAt: Date? = nil, memory: ActivityMemory = ActivityMemory()
    ) {
        self.id = id
        self.slug = slug
        self.name = name
        self.priority = priority
        self.state = state
        self.content = content
        self.endedTTL = endedTTL
        self.staleTTL = staleTTL
        self.dismissalTTL = dismissalTTL
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.endedAt = endedAt
        self.deleteAt = deleteAt
        self.memory = memory
    }

    /// The content's template (`generic` when the activity has no content yet).
    public var template: ActivityTemplate {
        content["template"]?.stringValue.flatMap(ActivityTemplate.init(rawValue:)) ?? .generic
    }

    /// The content as the API answers it and as `content-state` is pushed: the stored content, or
    /// `{"template":"generic"}` when there is none yet.
    public var contentForAnswer: JSONObject {
        content.isEmpty ? ["template": "generic"] : content
    }

    enum CodingKeys: String, CodingKey {
        case id, slug, name, priority, state, content, memory
        case endedTTL = "ended_ttl"
        case staleTTL = "stale_ttl"
        case dismissalTTL = "dismissal_ttl"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case endedAt = "ended_at"
        case deleteAt = "delete_at"
    }
}

/// What the server remembers about an activity beyond its content.
public struct ActivityMemory: Sendable, Equatable, Codable {
    /// `timeline`: the points kept per series (at most ``TimelineHistory/maximumPointsPerSeries`` each), oldest first.
    public var timelineHistory: [String: [TimelinePoint]]
    /// `log`: the rolling backlog, newest first, at most ``LogBacklog/maximumLines`` lines.
    public var logBacklog: [JSONValue]
    /// `countdown`: the warning push for the current `end_date` went out.
    public var countdownWarningSent: Bool
    /// `approval`: the answer, once the app reported a tap or the deadline took `on_expire` (``ApprovalRules``). Kept in
    /// the document, so a row written before it reads as unanswered.
    public var approvalAnswer: ApprovalAnswer?

    public init(
        timelineHistory: [String: [TimelinePoint]] = [:], logBacklog: [JSONValue] = [], countdownWarningSent: Bool = false,
        approvalAnswer: ApprovalAnswer? = nil
    ) {
        self.timelineHistory = timelineHistory
        self.logBacklog = logBacklog
        self.countdownWarningSent = countdownWarningSent
        self.approvalAnswer = approvalAnswer
    }

    enum CodingKeys: String, CodingKey {
        case timelineHistory = "timeline_history"
        case logBacklog = "log_backlog"
        case countdownWarningSent = "countdown_warning_sent"
        case approvalAnswer = "approval_answer"
    }
}

/// One point of a timeline series (PushWard's `HistoryPoint`).
public struct TimelinePoint: Sendable, Equatable, Codable {
    /// Unix seconds.
    public var timestamp: Int
    public var value: Double

    public init(timestamp: Int, value: Double) {
        self.timestamp = timestamp
        self.value = value
    }
}

/// The ten templates of PushWard's activities (`approval`, the tenth, is in features-2026.md, not in openapi.yaml).
public enum ActivityTemplate: String, Sendable, CaseIterable, Codable {
    case generic, countdown, steps, alert, gauge, timeline, board, log, media, approval
}
