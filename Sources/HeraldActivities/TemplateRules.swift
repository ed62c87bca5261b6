import Foundation
import HeraldCore

/// The field rules of the ten templates (docs-full.txt's field tables and "Template-Specific Validation", openapi.yaml's
/// `Content*` schemas), checked on the merged content. Members a template does not name are kept (the schemas allow
/// additional properties), except the image trio and the media fields, which only their templates accept.
enum TemplateRules {
    /// Templates with an image slot.
    static let imageTemplates: Set<ActivityTemplate> = [.generic, .steps, .media]
    static let imageFields = ["image_url", "image_shape", "image_thumbhash"]
    /// Members only `media` accepts.
    static let mediaFields = ["media_title", "playback_state", "position_seconds", "duration_seconds", "position_at", "volume", "favorite", "controls"]
    /// The fixed control slots of `media` (plus `extra`).
    static let controlSlots = ["previous", "play_pause", "play", "pause", "next", "stop", "favorite", "volume_down", "volume_up"]

    static func check(_ content: JSONObject, template: ActivityTemplate, now: Date) throws(ActivityProblem) {
        let reader = ContentReader(content)
        try checkCommon(reader)
        switch template {
        case .generic: break
        case .countdown: try checkCountdown(reader)
        case .steps: try checkSteps(reader)
        case .alert: try checkAlert(reader)
        case .gauge: try checkGauge(reader)
        case .timeline: try checkTimeline(reader)
        case .board: try checkBoard(reader)
        case .log: try checkLog(reader)
        case .media: try checkMedia(reader, now: now)
        case .approval: try ApprovalRules.check(reader)
        }
    }

    /// What every template shares: texts and their lengths, progress, the dates, live progress, the alarm, the actions.
    static func checkCommon(_ reader: ContentReader) throws(ActivityProblem) {
        _ = try reader.number("progress", in: 0...1)
        _ = try reader.string("state", maxLength: 256)
        _ = try reader.string("subtitle", maxLength: 256)
        _ = try reader.string("icon", maxLength: 128)
        for color in ["accent_color", "background_color", "text_color"] { _ = try reader.string(color) }
        for url in ["url", "secondary_url"] { _ = try reader.string(url, maxLength: 2_048) }
        // Dates at most year 9999 and other seconds bounded the same: no sum of them can overflow (ActivityLimits).
        _ = try reader.integer("remaining_time", in: ActivityLimits.unixSeconds)
        let start = try reader.integer("start_date", in: 1...ActivityLimits.latestUnixSeconds)
        let end = try reader.integer("end_date", in: 1...ActivityLimits.latestUnixSeconds)
        if let start, let end, start >= end { throw reader.fail("start_date", "start_date must be before end_date") }
        if try reader.bool("live_progress") == true, end == nil { throw reader.fail("live_progress", "live_progress requires end_date (or duration)") }
        if try reader.bool("alarm") == true, end == nil { throw reader.fail("alarm", "alarm requires end_date (or duration)") }
        _ = try reader.integer("snooze_seconds", in: 60...3_600)
        for action in ["tap_action", "url_action", "secondary_url_action"] { try ActionRules.check(reader, action) }
        if let imageURL = try reader.string("image_url", maxLength: 2_048) {
            guard let components = URLComponents(string: imageURL), components.scheme?.lowercased() == "https", components.host?.isEmpty == false,
                components.user == nil, components.password == nil
            else { throw reader.fail("image_url", "image_url must be an https URL with a host and no user or password") }
        }
        _ = try reader.oneOf("image_shape", ["poster", "square", "circle"])
        _ = try reader.string("image_thumbhash", maxLength: 64)
    }

    static func checkCountdown(_ reader: ContentReader) throws(ActivityProblem) {
        guard reader.isPresent("end_date") else { throw reader.fail("end_date", "countdown requires end_date or duration") }
        _ = try reader.integer("warning_threshold", in: ActivityLimits.unixSeconds)
        _ = try reader.string("completion_message", maxLength: 512)
    }

    static func checkSteps(_ reader: ContentReader) throws(ActivityProblem) {
        guard let total = try reader.integer("total_steps", in: 1...64, required: true) else { return }
        _ = try reader.integer("current_step", in: 0...total, required: true)
        func checkLength(_ key: String) throws(ActivityProblem) -> [JSONValue]? {
            guard let elements = try reader.array(key) else { return nil }
            guard elements.count == total else { throw reader.fail(key, "\(key) must have total_steps (\(total)) entries, got \(elements.count)") }
            return elements
        }
        for (index, row) in (try checkLength("step_rows") ?? []).enumerated() {
            guard let rows = row.integerValue, (1...10).contains(rows) else { throw reader.fail("step_rows[\(index)]", "step_rows values must be 1 to 10") }
        }
        for (index, label) in (try checkLength("step_labels") ?? []).enumerated() {
            guard let text = label.stringValue, ContentLimits.fits(text, characters: 32) else {
                throw reader.fail("step_labels[\(index)]", "step_labels must be strings of at most 32 characters")
            }
        }
        for (index, weight) in (try checkLength("step_weights") ?? []).enumerated() {
            guard let number = weight.doubleValue, number > 0 else { throw reader.fail("step_weights[\(index)]", "step_weights must be positive numbers") }
        }
        for (index, color) in (try checkLength("step_colors") ?? []).enumerated() where color.stringValue == nil {
            throw reader.fail("step_colors[\(index)]", "step_colors must be strings")
        }
    }

    static func checkAlert(_ reader: ContentReader) throws(ActivityProblem) {
        _ = try reader.oneOf("severity", ["critical", "warning", "info"], required: true)
        _ = try reader.string("severity_label", maxLength: 32)
        _ = try reader.integer("fired_at", in: ActivityLimits.unixSeconds)
    }

    static func checkGauge(_ reader: ContentReader) throws(ActivityProblem) {
        guard let value = try reader.number("value", required: true), let minimum = try reader.number("min_value", required: true),
            let maximum = try reader.number("max_value", required: true)
        else { return }
        guard minimum < maximum else { throw reader.fail("max_value", "max_value must be greater than min_value") }
        guard (minimum...maximum).contains(value) else {
            throw reader.fail("value", "value must be between min_value and max_value, got \(value)")
        }
        _ = try reader.string("unit", maxLength: 32)
        _ = try reader.integer("decimals", in: 0...10)
    }

    static func checkTimeline(_ reader: ContentReader) throws(ActivityProblem) {
        guard let values = try reader.objectMember("value", required: true) else { return }
        guard (1...10).contains(values.count) else { throw reader.fail("value", "value must have 1 to 10 series, got \(values.count)") }
        for (series, number) in values.sorted(by: { $0.key < $1.key }) {
            guard ContentLimits.fits(series, characters: 32), !series.isEmpty else { throw reader.fail("value", "series names must be 1 to 32 characters") }
            guard number.doubleValue != nil else { throw reader.fail("value.\(series)", "value.\(series) must be a number") }
        }
        _ = try reader.string("unit", maxLength: 32)
        if let units = try reader.objectMember("units") {
            for (series, unit) in units.sorted(by: { $0.key < $1.key }) {
                guard values[series] != nil else { throw reader.fail("units.\(series)", "units keys must match value keys") }
                guard let text = unit.stringValue, ContentLimits.fits(text, characters: 32) else { throw reader.fail("units.\(series)", "units values must be at most 32 characters") }
            }
        }
        _ = try reader.oneOf("scale", ["linear", "logarithmic"])
        _ = try reader.integer("decimals", in: 0...10)
        _ = try reader.bool("smoothing")
        _ = try reader.string("primary_series", maxLength: 32)
        for threshold in try reader.objects("thresholds", count: 0...5) {
            _ = try threshold.number("value", required: true)
            _ = try threshold.string("color")
            _ = try threshold.string("label", maxLength: 12)
        }
    }

    static func checkBoard(_ reader: ContentReader) throws(ActivityProblem) {
        for tile in try reader.objects("tiles", count: 1...4, required: true) {
            _ = try tile.string("label", maxLength: 32, required: true)
            _ = try tile.string("value", maxLength: 16, required: true)
            _ = try tile.string("unit", maxLength: 8)
            _ = try tile.string("icon")
            _ = try tile.string("color")
            _ = try tile.oneOf("trend", ["up", "down", "flat"])
            try ActionRules.check(tile, "url_action")
        }
    }

    static func checkLog(_ reader: ContentReader) throws(ActivityProblem) {
        for line in try reader.objects("lines", count: 1...20, required: true) {
            _ = try line.string("text", maxLength: 512, minLength: 1, required: true)
            _ = try line.integer("at", in: ActivityLimits.unixSeconds)
            _ = try line.oneOf("level", ["info", "warn", "error"])
            if let unknown = line.object.keys.sorted().first(where: { !["text", "at", "level"].contains($0) }) {
                throw line.fail(unknown, "unknown log line field \"\(unknown)\"")
            }
        }
    }

    static func checkMedia(_ reader: ContentReader, now: Date) throws(ActivityProblem) {
        _ = try reader.string("media_title", maxLength: 128)
        _ = try reader.oneOf("playback_state", ["playing", "paused", "stopped", "buffering"])
        _ = try reader.number("position_seconds", in: 0...604_800)
        if let duration = try reader.number("duration_seconds", in: 0...604_800), duration <= 0 {
            throw reader.fail("duration_seconds", "duration_seconds must be greater than 0")
        }
        _ = try reader.number("volume", in: 0...1)
        _ = try reader.bool("favorite")
        guard let controls = try reader.objectMember("controls") else { return }
        let member = ContentReader(controls, path: reader.location("controls"))
        for slot in controls.keys.sorted() where slot != "extra" {
            guard controlSlots.contains(slot) else { throw member.fail(slot, "unknown control slot \"\(slot)\"") }
            try ActionRules.check(member, slot, isControl: true)
        }
        let extras = try member.array("extra", count: 0...3) ?? []
        for index in extras.indices {
            let holder = ContentReader(["extra[\(index)]": extras[index]], path: member.path)
            try ActionRules.check(holder, "extra[\(index)]", isControl: true, iconRequired: true)
        }
    }

    /// `position_at` must lie within 12 h before and 5 min after `now` when it is sent.
    static func checkPositionAt(_ reader: ContentReader, now: Date) throws(ActivityProblem) {
        guard let at = try reader.integer("position_at", in: ActivityLimits.unixSeconds) else { return }
        let seconds = Int(now.timeIntervalSince1970)
        guard (seconds - 43_200)...(seconds + 300) ~= at else {
            throw reader.fail("position_at", "position_at must be at most 5 minutes in the future and 12 hours in the past")
        }
    }
}
