import Foundation
import HeraldCore

/// The answer of an `approval` card: the option taken, who took it, when.
///
/// ```json
/// {"option": "approve", "by": "user", "answered_at": "2026-11-29T10:00:05Z"}
/// ```
public struct ApprovalAnswer: Sendable, Equatable, Codable {
    /// Who took the option.
    public enum Taker: String, Sendable, Equatable, Codable {
        /// The person tapped it (the app reported it).
        case user
        /// `end_date` passed without a tap and the card's `on_expire` was taken.
        case expired
    }

    /// The `id` of one of the card's options.
    public var option: String
    public var by: Taker
    /// When Herald recorded it (the tap's report, or the expiry run).
    public var answeredAt: Date

    public init(option: String, by: Taker, answeredAt: Date) {
        self.option = option
        self.by = by
        self.answeredAt = answeredAt
    }

    enum CodingKeys: String, CodingKey {
        case option, by
        case answeredAt = "answered_at"
    }
}

/// Why an answer to an activity is refused (``ApprovalRules/answer(_:option:now:)``).
public enum ApprovalRefusal: Error, Sendable, Equatable {
    /// The activity is not an `approval` card.
    case notApproval
    /// `option` is not the id of one of the card's options (`allowed`, in the card's order).
    case unknownOption(allowed: [String])
    /// The card was answered before; the first answer stays.
    case alreadyAnswered(ApprovalAnswer)
    /// The card is not ongoing (ended or preempted) and was never answered: it takes no answer any more.
    case notOngoing
}

/// PushWard's tenth template, `approval` (features-2026.md, "Approval cards"): a question (`state`), its `source`, and
/// 2 to 4 `options` (`{id, title}`) the person taps on the Lock Screen. Pure, like the rest of the module.
///
/// | When | What the server does |
/// |---|---|
/// | the app reports a tap (``answer(_:option:now:)``) | `answer = {option, by: user}`; no push; the card ends ``endDelay`` later |
/// | `end_date` passes unanswered, with `on_expire` | `answer = {option: on_expire, by: expired}`; the card ends at once |
/// | `end_date` passes unanswered, without `on_expire` | the card ends at once, unanswered |
/// | a patch changes the option ids | the answer is forgotten (a new question); other patches keep it |
///
/// The end push's `content-state` carries `answer` (``ContentState``). A card started again with the same options keeps
/// its answer (PushWard's rule: clients use a new slug per question), so it ends again at once.
public enum ApprovalRules {
    /// How long an answered card stays on the phone before the server ends it: long enough to show the choice.
    public static let endDelay: TimeInterval = 5
    /// How many options a card has.
    public static let optionCount = 2...4
    /// Longest option `id` and `title`, in characters (as the actions of `POST /notifications`).
    public static let maximumOptionIDLength = 64
    public static let maximumOptionTitleLength = 64
    /// Longest `source`, in characters (as `source` of `POST /notifications`).
    public static let maximumSourceLength = 128
    /// The members an option may have.
    static let optionMembers: Set<String> = ["id", "title"]

    /// The template's rules on the merged content: `state` (the question, required), `source`, `options`, `on_expire`.
    static func check(_ reader: ContentReader) throws(ActivityProblem) {
        _ = try reader.string("state", maxLength: 256, minLength: 1, required: true)
        _ = try reader.string("source", maxLength: maximumSourceLength)
        var ids: Set<String> = []
        for option in try reader.objects("options", count: optionCount, required: true) {
            if let unknown = option.object.keys.sorted().first(where: { !optionMembers.contains($0) }) {
                throw option.fail(unknown, "unknown option field \"\(unknown)\": an option is {id, title}")
            }
            guard let id = try option.string("id", maxLength: maximumOptionIDLength, minLength: 1, required: true) else { continue }
            _ = try option.string("title", maxLength: maximumOptionTitleLength, minLength: 1, required: true)
            guard ids.insert(id).inserted else { throw option.fail("id", "option ids must be unique; \"\(id)\" is repeated") }
        }
        guard let onExpire = try reader.string("on_expire") else { return }
        guard reader.isPresent("end_date") else { throw reader.fail("on_expire", "on_expire requires end_date (or duration)") }
        guard ids.contains(onExpire) else {
            throw reader.fail("on_expire", "on_expire must be the id of one of the options (\(optionIDs(in: reader.object).joined(separator: ", ")))")
        }
    }

    /// After a patch merged: an `approval` card never stores a client's `answer` member (the answer is the server's),
    /// and forgets its answer when the option ids changed; another template forgets it.
    static func reconcile(_ merged: inout JSONObject, stored: JSONObject, template: ActivityTemplate, memory: inout ActivityMemory) {
        guard template == .approval else {
            memory.approvalAnswer = nil
            return
        }
        merged["answer"] = nil
        if optionIDs(in: merged) != optionIDs(in: stored) { memory.approvalAnswer = nil }
    }

    /// The option ids of a card's content, in order.
    public static func optionIDs(in content: JSONObject) -> [String] {
        (content["options"]?.arrayValue ?? []).compactMap { $0.objectValue?["id"]?.stringValue }
    }

    /// The card with the person's answer; refused when it is not an approval card, `option` is not one of its options,
    /// it was answered before, or it is no longer ongoing.
    public static func answer(_ activity: Activity, option: String, now: Date) throws(ApprovalRefusal) -> Activity {
        guard activity.template == .approval else { throw .notApproval }
        let allowed = optionIDs(in: activity.content)
        guard allowed.contains(option) else { throw .unknownOption(allowed: allowed) }
        if let first = activity.memory.approvalAnswer { throw .alreadyAnswered(first) }
        guard activity.state == .ongoing else { throw .notOngoing }
        var answered = activity
        answered.memory.approvalAnswer = ApprovalAnswer(option: option, by: .user, answeredAt: now)
        answered.updatedAt = now
        return answered
    }

    /// Whether a long poll on the activity has nothing more to wait for: it is gone, not an approval card, answered, or
    /// no longer ongoing.
    public static func isSettled(_ activity: Activity?) -> Bool {
        guard let activity, activity.template == .approval, activity.state == .ongoing else { return true }
        return activity.memory.approvalAnswer != nil
    }

    /// What is due for an ongoing card: its end ``endDelay`` after the answer, else the expiry at `end_date`.
    static func nextDue(of activity: Activity) -> ActivityDue? {
        if let answer = activity.memory.approvalAnswer {
            return ActivityDue(kind: .approvalEnd, at: answer.answeredAt.addingTimeInterval(endDelay))
        }
        guard let endDate = activity.content["end_date"]?.integerValue else { return nil }
        return ActivityDue(kind: .approvalExpiry, at: Date(timeIntervalSince1970: TimeInterval(endDate)))
    }

    /// The answer as the `content-state` carries it (`answered_at` in Unix seconds, as the content's other dates).
    static func wireForm(of answer: ApprovalAnswer) -> JSONValue {
        ["option": .string(answer.option), "by": .string(answer.by.rawValue), "answered_at": .int(Int(answer.answeredAt.timeIntervalSince1970.rounded(.down)))]
    }

    /// The longest answer the card can get, for the size check of its pushes.
    static func longestAnswer(of activity: Activity, now: Date) -> ApprovalAnswer? {
        guard let longest = optionIDs(in: activity.content).max(by: { $0.utf8.count < $1.utf8.count }) else { return nil }
        return ApprovalAnswer(option: longest, by: .expired, answeredAt: now)
    }
}

extension ActivityRules {
    /// Ends an approval card whose time came: answered ``ApprovalRules/endDelay`` ago, or past its `end_date` unanswered
    /// (taking `on_expire` first when it has one). The end is silent: the person saw the card or made the choice.
    func runApproval(_ kind: ActivityDue.Kind, on activity: Activity, now: Date) -> ActivityOutcome {
        var changed = activity
        if kind == .approvalExpiry, changed.memory.approvalAnswer == nil, let option = changed.content["on_expire"]?.stringValue {
            changed.memory.approvalAnswer = ApprovalAnswer(option: option, by: .expired, answeredAt: now)
        }
        end(&changed, now: now)
        let push = ActivityPush(event: .end, dismissalDate: dismissalDate(of: changed, now: now))
        return ActivityOutcome(activity: changed, action: .updated, push: push)
    }
}
