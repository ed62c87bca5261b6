import Foundation
import HeraldCore

/// A content merge patch applied to an activity: RFC 7396 onto the stored content, the server-owned members stripped,
/// the server-computed ones filled in, the template's rules checked (422 `activity.content_invalid`).
///
/// In order: server-owned members (`warning_pushed`, `snoozed_until`, `log_backlog`) and `history` leave the patch;
/// the patch merges (media `controls` one level deep, each slot replaced whole, `extra` replaced); members the new
/// template has no place for are dropped when inherited and refused when sent (the image trio outside generic, steps
/// and media; the media fields outside media); steps arrays whose length no longer matches `total_steps` are dropped
/// when inherited; `duration` becomes `start_date`/`end_date` (an `end_date` sent wins); media defaults
/// `position_at` and control methods and mirrors `progress`; gauge computes `progress`; the template's rules are
/// checked; a timeline appends its points (or takes a seed), a log its lines to the backlog.
enum ActivityContent {
    /// Members the server owns; a client's value for them is dropped.
    static let serverOwned = ["warning_pushed", "snoozed_until", "log_backlog"]

    static func apply(_ patch: JSONObject, to activity: inout Activity, now: Date) throws(ActivityProblem) {
        var patch = patch
        for key in serverOwned { patch[key] = nil }
        let historySeed = patch.removeValue(forKey: "history")
        let controlsPatch = patch.removeValue(forKey: "controls")
        let sent = ContentReader(patch)
        let stored = activity.content

        var merged = MergePatch.apply(patch, to: stored)
        if let controlsPatch { merged["controls"] = try mergedControls(controlsPatch, onto: stored["controls"]) }
        guard let templateName = try sent.string("template") ?? stored["template"]?.stringValue else {
            throw .contentInvalid("content.template is required", location: "body.content.template")
        }
        guard let template = ActivityTemplate(rawValue: templateName) else {
            throw .contentInvalid(
                "unknown template \"\(templateName)\", must be one of \(ActivityTemplate.allCases.map(\.rawValue).joined(separator: ", "))",
                location: "body.content.template")
        }
        merged["template"] = .string(templateName)
        if merged["controls"] == .object([:]) { merged["controls"] = nil }

        try dropOrRefuse(TemplateRules.imageFields, unless: TemplateRules.imageTemplates.contains(template), sent: patch, in: &merged, template: template)
        var mediaSent = patch
        if controlsPatch != nil, controlsPatch != .null { mediaSent["controls"] = controlsPatch }
        try dropOrRefuse(TemplateRules.mediaFields, unless: template == .media, sent: mediaSent, in: &merged, template: template)
        if template == .steps { dropMismatchedStepArrays(in: &merged, sent: patch) }
        try resolveDuration(sent: sent, stored: stored, template: template, into: &merged, now: now)
        if template == .media {
            try TemplateRules.checkPositionAt(sent, now: now)
            completeMedia(&merged, sent: patch, now: now)
        }
        try TemplateRules.check(merged, template: template, now: now)
        ApprovalRules.reconcile(&merged, stored: stored, template: template, memory: &activity.memory)
        if template == .gauge, let value = merged["value"]?.doubleValue, let minimum = merged["min_value"]?.doubleValue,
            let maximum = merged["max_value"]?.doubleValue
        {
            // Extreme bounds (-1e308 and 1e308) overflow the span: refused rather than stored as a NaN or infinite progress.
            let progress = (value - minimum) / (maximum - minimum)
            guard (maximum - minimum).isFinite, progress.isFinite, (0...1).contains(progress) else {
                throw .contentInvalid(
                    "min_value and max_value are too far apart to compute progress (their difference must be a finite number)",
                    location: "body.content.max_value")
            }
            merged["progress"] = .double(progress)
        }
        if merged["end_date"] != stored["end_date"] {
            activity.memory.countdownWarningSent = false
            merged["warning_pushed"] = nil
        }
        var measured = merged
        measured["history"] = nil  // bounded on its own: 10 series of 300 points
        let size = (try? JSONValue.object(measured).encoded().count) ?? Int.max
        guard size <= ContentLimits.maximumContentBytes else {
            throw .contentInvalid("content must be at most \(ContentLimits.maximumContentBytes) bytes as stored, got \(size)", location: "body.content")
        }
        try accumulate(template: template, sent: patch, historySeed: historySeed, into: &merged, memory: &activity.memory, now: now)
        activity.content = merged
    }

    /// Removes `fields` the template has no place for: inherited ones silently, sent ones (not `null`) with a 422.
    static func dropOrRefuse(_ fields: [String], unless allowed: Bool, sent: JSONObject, in merged: inout JSONObject, template: ActivityTemplate)
        throws(ActivityProblem)
    {
        guard !allowed else { return }
        if let field = fields.first(where: { sent[$0] != nil && sent[$0] != .null }) {
            throw .contentInvalid("\(field) is not accepted on the \(template.rawValue) template", location: "body.content.\(field)")
        }
        for field in fields { merged[field] = nil }
    }

    /// `controls` deep-merges one level: `null` removes a slot, a slot sent replaces the stored one whole, `extra`
    /// is replaced; `controls: null` removes them all.
    static func mergedControls(_ patch: JSONValue, onto stored: JSONValue?) throws(ActivityProblem) -> JSONValue? {
        switch patch {
        case .null: return nil
        case .object(let slots):
            var controls = stored?.objectValue ?? [:]
            // `JSONValue` is `ExpressibleByNilLiteral`: `nil` in a ternary would store `.null`, hence `removeValue`.
            for (slot, value) in slots {
                if value == .null { controls.removeValue(forKey: slot) } else { controls[slot] = value }
            }
            return .object(controls)
        default: throw .contentInvalid("controls must be an object", location: "body.content.controls")
        }
    }

    /// Steps arrays kept from an earlier run whose length no longer matches `total_steps` are dropped (sent ones are
    /// checked, and refused when they do not match).
    static func dropMismatchedStepArrays(in merged: inout JSONObject, sent: JSONObject) {
        guard let total = merged["total_steps"]?.integerValue else { return }
        for key in ["step_rows", "step_labels", "step_weights", "step_colors"] where sent[key] == nil {
            if let elements = merged[key]?.arrayValue, elements.count != total { merged[key] = nil }
        }
    }

    /// `duration` sent without `end_date`: `start_date = now`, `end_date = now + duration`. An `end_date` sent keeps
    /// the stored `start_date`; a countdown without one starts now. `duration` itself is never stored.
    static func resolveDuration(sent: ContentReader, stored: JSONObject, template: ActivityTemplate, into merged: inout JSONObject, now: Date)
        throws(ActivityProblem)
    {
        let nowSeconds = Int(now.timeIntervalSince1970)
        merged["duration"] = nil
        if let duration = sent.object["duration"], duration != .null, !sent.isPresent("end_date") {
            let seconds: Int
            do {
                seconds = try DurationText.seconds(duration)
            } catch .tooLong {
                throw sent.fail("duration", "duration must be at most \(ActivityLimits.maximumDuration) seconds")
            } catch {
                throw sent.fail("duration", "duration must be positive seconds or a duration such as \"30s\", \"5m\", \"1h30m\"")
            }
            merged["start_date"] = .int(nowSeconds)
            merged["end_date"] = .int(try ActivityLimits.adding(seconds, to: nowSeconds, location: sent.location("duration")))
        }
        if template == .countdown, let end = merged["end_date"]?.integerValue, end > 1, merged["start_date"] == nil, sent.object["start_date"] != .null {
            merged["start_date"] = .int(min(nowSeconds, end - 1))
        }
    }

    /// `position_at` defaults to now when `position_seconds` is sent without it; an http(s) control without a
    /// method gets `POST`; `progress` mirrors `position_seconds / duration_seconds` for apps that draw media as generic.
    static func completeMedia(_ merged: inout JSONObject, sent: JSONObject, now: Date) {
        if sent["position_seconds"] != nil, sent["position_seconds"] != .null, sent["position_at"] == nil {
            merged["position_at"] = .int(Int(now.timeIntervalSince1970))
        }
        if case .object(var controls)? = merged["controls"] {
            for (slot, value) in controls where slot != "extra" {
                guard case .object(var action) = value, action["method"] == nil, ActionRules.isHTTP(action) else { continue }
                action["method"] = "POST"
                controls[slot] = .object(action)
            }
            if case .array(let extras)? = controls["extra"] {
                controls["extra"] = .array(
                    extras.map { extra in
                        guard case .object(var action) = extra, action["method"] == nil, ActionRules.isHTTP(action) else { return extra }
                        action["method"] = "POST"
                        return .object(action)
                    })
            }
            merged["controls"] = .object(controls)
        }
        if let position = merged["position_seconds"]?.doubleValue, let duration = merged["duration_seconds"]?.doubleValue, duration > 0 {
            merged["progress"] = .double(min(1, position / duration))
        }
    }

    /// The server's accumulation: a timeline's history (a seed while it has none, then one point per series sent),
    /// a log's backlog.
    static func accumulate(
        template: ActivityTemplate, sent: JSONObject, historySeed: JSONValue?, into merged: inout JSONObject, memory: inout ActivityMemory, now: Date
    ) throws(ActivityProblem) {
        switch template {
        case .timeline:
            if memory.timelineHistory.isEmpty, let historySeed, historySeed != .null {
                guard let seed = TimelineHistory.seed(from: historySeed) else {
                    throw .contentInvalid("history must map series to [{timestamp, value}]", location: "body.content.history")
                }
                memory.timelineHistory = seed
            }
            if case .object(let values)? = sent["value"] {
                let numbers = values.compactMapValues(\.doubleValue)
                memory.timelineHistory = TimelineHistory.appending(numbers, at: Int(now.timeIntervalSince1970), to: memory.timelineHistory)
            }
            if memory.timelineHistory.isEmpty {
                merged.removeValue(forKey: "history")
            } else {
                merged["history"] = TimelineHistory.json(memory.timelineHistory)
            }
        case .log:
            if case .array(let lines)? = sent["lines"] { memory.logBacklog = LogBacklog.merging(lines, into: memory.logBacklog) }
            merged["history"] = nil
        default:
            merged["history"] = nil
            if !memory.timelineHistory.isEmpty { memory.timelineHistory = [:] }
        }
    }
}

/// RFC 7396 JSON Merge Patch.
enum MergePatch {
    /// `patch` merged onto `target`: members set to `null` removed, objects merged member by member, anything else
    /// replaced.
    static func apply(_ patch: JSONObject, to target: JSONObject) -> JSONObject {
        var result = target
        for (key, value) in patch {
            switch value {
            case .null: result[key] = nil
            case .object(let member): result[key] = .object(apply(member, to: result[key]?.objectValue ?? [:]))
            default: result[key] = value
            }
        }
        return result
    }
}
