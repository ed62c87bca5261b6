import HeraldCore

/// The `content-state` of a push: the stored content as it goes on the wire, and the reductions that make it fit.
enum ContentState {
    /// One step that shrinks a content-state.
    typealias Reduction = @Sendable (inout JSONObject) -> Void

    /// The stored content (or `{"template":"generic"}`), less what never goes to the phone: the log backlog, the legacy
    /// `url` / `secondary_url` where the structured action is set. An ended media card is `stopped`; an answered
    /// approval card carries `answer` (``ApprovalRules/wireForm(of:)``).
    static func wireForm(of activity: Activity, event: ActivityEvent) -> JSONObject {
        var content = activity.contentForAnswer
        content["log_backlog"] = nil
        if content["url_action"] != nil { content["url"] = nil }
        if content["secondary_url_action"] != nil { content["secondary_url"] = nil }
        if event == .end, activity.template == .media { content["playback_state"] = "stopped" }
        if activity.template == .approval, let answer = activity.memory.approvalAnswer { content["answer"] = ApprovalRules.wireForm(of: answer) }
        return content
    }

    /// The steps that shrink `content`, in order, each applied once until the payload fits (a timeline's history is
    /// fitted by ``LiveActivityPayload`` directly).
    static func reductions(of content: JSONObject) -> [Reduction] {
        switch content["template"]?.stringValue {
        case "log": logReductions(of: content)
        case "media": mediaReductions
        default: []
        }
    }

    /// A log's lines, the oldest dropped one at a time down to the newest line.
    static func logReductions(of content: JSONObject) -> [Reduction] {
        let count = content["lines"]?.arrayValue?.count ?? 0
        return Array(
            repeating: { content in
                guard case .array(let lines)? = content["lines"], lines.count > 1 else { return }
                content["lines"] = .array(Array(lines.dropLast()))
            }, count: max(0, count - 1))
    }

    /// PushWard's order: `extra`, the volume buttons, `favorite`, `stop`, `image_thumbhash`, `image_url`, `previous` and
    /// `next`; never the title, state, position or play slots, never a surviving control's headers or body.
    static let mediaReductions: [Reduction] = [
        { removeControls(["extra"], from: &$0) },
        { removeControls(["volume_down", "volume_up"], from: &$0) },
        { removeControls(["favorite"], from: &$0) },
        { removeControls(["stop"], from: &$0) },
        { $0["image_thumbhash"] = nil },
        { $0["image_url"] = nil },
        { removeControls(["previous", "next"], from: &$0) },
    ]

    static func removeControls(_ slots: [String], from content: inout JSONObject) {
        guard case .object(var controls)? = content["controls"] else { return }
        for slot in slots { controls[slot] = nil }
        content["controls"] = .object(controls)
    }
}

extension JSONValue {
    /// The value as an array, if it is one.
    var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
