import Foundation
import HeraldCore

/// Alertmanager's webhook (version 4) and Grafana's unified alerting webhook, which extends it: one payload is one
/// notification, whatever the number of alerts in it.
///
/// | Payload | Notification |
/// |---|---|
/// | `status` `firing`, any alert `severity` `critical`/`page` | time-sensitive |
/// | `status` `firing` | active |
/// | `status` `resolved` | passive |
/// | `groupKey` (else the single alert's `fingerprint`) | the collapse id `alert-` + 32 hex of its SHA-256: the resolution replaces the alarm |
/// | Grafana's `title`, else `[FIRING:n] <group labels>` | title |
/// | Grafana's `message`, else each alert's `summary`/`description`/`alertname`, one per line, with a count | body |
/// | Grafana's first `panelURL`/`dashboardURL`, else `externalURL`, else the first `generatorURL` | tap URL |
/// | Grafana's first alert `imageURL` | image |
struct AlertPreset {
    enum Flavor: String {
        case alertmanager
        case grafana
    }

    var title: String
    var body: String
    var level: NotificationContent.Level
    var collapseID: String?
    var tapURL: String?
    var imageURL: String?
    var thread: String

    init(_ json: JSONObject, flavor: Flavor) throws {
        let fields = FieldReader(json)
        let status = try fields.optionalString("status")?.lowercased() ?? "firing"
        guard ["firing", "resolved"].contains(status) else {
            throw APIError.invalidField("status", "status must be firing or resolved; got \"\(status)\".")
        }
        guard case .array(let elements)? = fields.value("alerts") else {
            throw APIError.invalidField("alerts", "alerts is required: an array of alerts (Alertmanager's webhook, version 4).")
        }
        let alerts = try elements.enumerated().map { index, element in
            guard case .object(let alert) = element else { throw APIError.invalidField("alerts[\(index)]", "alerts[\(index)] must be an object.") }
            return FieldReader(alert, path: "alerts[\(index)]")
        }
        let firing = alerts.filter { (try? $0.optionalString("status")) == "firing" }.count
        let groupLabels = Self.strings(fields.value("groupLabels"))
        let commonLabels = Self.strings(fields.value("commonLabels"))

        let count = status == "firing" ? max(firing, alerts.isEmpty ? 0 : 1) : alerts.count
        let labelText = groupLabels.sorted { $0.key < $1.key }.map(\.value).joined(separator: " ")
        let defaultTitle = status == "firing" ? "[FIRING:\(count)] \(labelText)" : "[RESOLVED] \(labelText)"
        let givenTitle = flavor == .grafana ? try fields.optionalString("title") : nil
        title = Self.clipped(givenTitle ?? defaultTitle.trimmingCharacters(in: .whitespaces), to: SenderTextRule.maximumTitleLength)

        let lines = alerts.map { alert -> String in
            let annotations = Self.strings(alert.value("annotations"))
            let labels = Self.strings(alert.value("labels"))
            let text = annotations["summary"] ?? annotations["description"] ?? labels["alertname"] ?? "alert"
            let state = (try? alert.optionalString("status")) == "resolved" ? "resolved" : "firing"
            return alerts.count > 1 ? "• \(text) (\(state))" : text
        }
        let message = flavor == .grafana ? try fields.optionalString("message") : nil
        if let message {
            body = message
        } else if alerts.count > 1 {
            body = "\(alerts.count) alerts, \(firing) firing:\n" + lines.joined(separator: "\n")
        } else {
            body = lines.first ?? (status == "resolved" ? "Resolved." : "Firing.")
        }

        let severities = alerts.compactMap { Self.strings($0.value("labels"))["severity"]?.lowercased() } + [commonLabels["severity"]?.lowercased()].compactMap { $0 }
        if status == "resolved" {
            level = .passive
        } else if severities.contains(where: { ["critical", "page", "emergency"].contains($0) }) {
            level = .timeSensitive
        } else {
            level = .active
        }

        let key = try fields.optionalString("groupKey") ?? (alerts.count == 1 ? try alerts[0].optionalString("fingerprint") : nil)
        collapseID = key.map { "alert-" + Secrets.hash($0).prefix(32) }

        var candidates: [String?] = []
        if flavor == .grafana {
            candidates += alerts.map { try? $0.optionalString("panelURL") } + alerts.map { try? $0.optionalString("dashboardURL") }
        }
        candidates.append(try fields.optionalString("externalURL"))
        candidates += alerts.map { try? $0.optionalString("generatorURL") }
        tapURL = candidates.lazy.compactMap { $0 }.first { (try? SenderURLRule.image($0, field: "url")) != nil }
        imageURL = flavor == .grafana
            ? alerts.lazy.compactMap { try? $0.optionalString("imageURL") }.first { (try? SenderURLRule.image($0, field: "imageURL")) != nil }
            : nil
        thread = flavor.rawValue
    }

    var draft: NotificationDraft {
        var data: JSONObject = ["source": .string(thread)]
        data["url"] = tapURL.map(JSONValue.string)
        data["image_url"] = imageURL.map(JSONValue.string)
        let content = NotificationContent(
            title: title, body: body, sound: level == .passive ? nil : .default, level: level, thread: thread, imageURL: imageURL,
            hasMedia: imageURL != nil, tapURL: tapURL, data: data)
        return NotificationDraft(pushType: .alert, priority: .alert(at: level), collapseID: collapseID, content: content)
    }

    /// The string members of a labels or annotations object.
    static func strings(_ value: JSONValue?) -> [String: String] {
        guard case .object(let object)? = value else { return [:] }
        return object.compactMapValues(\.stringValue)
    }

    static func clipped(_ text: String, to length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }
}
