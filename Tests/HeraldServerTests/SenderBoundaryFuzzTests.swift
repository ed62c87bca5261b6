import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import Testing

/// Every member of the senders' requests (docs/senders.md) with every ``BoundaryValue``: each is answered with a 2xx or a
/// 4xx and a JSON object, never a 5xx, and the server stays up (``BoundaryFuzzTests/fuzz(_:)``).
@Suite("Boundary values in the senders' requests")
struct SenderBoundaryFuzzTests {
    @Test(arguments: BoundaryDialect.senders)
    func noBoundaryValueCrashesOrFailsASendersRequest(dialect: BoundaryDialect) async throws {
        try await BoundaryFuzzTests.fuzz(dialect)
    }
}

extension BoundaryDialect {
    static let senders: [BoundaryDialect] = [
        BoundaryDialect(
            name: "ntfy JSON", path: "/",
            body: { credentials in
                [
                    "topic": .string(credentials.userID), "message": "Disk low", "title": "NAS", "priority": 4, "tags": ["warning", "nas"],
                    "click": "https://nas.lan/", "attach": "https://nas.lan/a.png", "icon": "https://nas.lan/i.png", "markdown": true,
                    "sequence_id": "disk", "filename": "a.png",
                    "actions": [["action": "http", "label": "Ack", "url": "https://nas.lan/ack", "method": "PUT", "headers": ["X-A": "b"], "body": "{}"]],
                ]
            },
            members: [
                "topic", "message", "title", "priority", "tags", "tags.0", "click", "attach", "icon", "markdown", "sequence_id", "filename",
                "actions", "actions.0.action", "actions.0.label", "actions.0.url", "actions.0.method", "actions.0.headers.X-A",
                "actions.0.body", "actions.0.clear", "delay",
            ]),
        BoundaryDialect(
            name: "ntfy query", method: .get, path: "/\(String(repeating: "0", count: 64))/publish",
            members: ["message", "m", "title", "t", "priority", "p", "tags", "click", "attach", "icon", "actions", "markdown", "sid", "delay"]),
        BoundaryDialect(
            name: "Gotify", path: "/message", headers: { $0.bearer },
            body: { _ in
                [
                    "message": "Grabbed", "title": "Sonarr", "priority": 5,
                    "extras": ["client::notification": ["click": ["url": "https://sonarr.lan/"], "bigImageUrl": "https://sonarr.lan/p.jpg"]],
                ]
            },
            members: [
                "message", "title", "priority", "extras", "extras.client::notification", "extras.client::notification.click.url",
                "extras.client::notification.bigImageUrl",
            ]),
        BoundaryDialect(
            name: "Bark", path: "/push",
            body: { credentials in
                [
                    "device_key": .string(credentials.userID), "title": "Door", "subtitle": "Front", "body": "Opened", "level": "active",
                    "sound": "minuet", "badge": 2, "icon": "https://x.lan/i.png", "image": "https://x.lan/a.jpg", "group": "doors",
                    "url": "https://x.lan/", "id": "door", "device_keys": [.string(credentials.userID)],
                ]
            },
            members: [
                "device_key", "device_keys", "device_keys.0", "title", "subtitle", "body", "level", "sound", "badge", "icon", "image",
                "group", "url", "id", "copy",
            ]),
        BoundaryDialect(
            name: "Alertmanager hook", path: "/api/push/hooks/alertmanager", headers: { $0.bearer },
            body: { _ in
                [
                    "version": "4", "groupKey": "{}:{alertname=\"Disk\"}", "status": "firing", "groupLabels": ["alertname": "Disk"],
                    "commonLabels": ["severity": "critical"], "externalURL": "https://am.lan",
                    "alerts": [
                        [
                            "status": "firing", "labels": ["alertname": "Disk", "severity": "critical"],
                            "annotations": ["summary": "Disk full"], "generatorURL": "https://prom.lan/g", "fingerprint": "abc",
                        ]
                    ],
                ]
            },
            members: [
                "status", "groupKey", "groupLabels", "groupLabels.alertname", "commonLabels.severity", "externalURL", "alerts",
                "alerts.0", "alerts.0.status", "alerts.0.labels.severity", "alerts.0.annotations.summary", "alerts.0.generatorURL",
                "alerts.0.fingerprint",
            ]),
        BoundaryDialect(
            name: "Grafana hook", path: "/api/push/hooks/grafana", headers: { $0.bearer },
            body: { _ in
                [
                    "status": "firing", "title": "[FIRING:1] CPU", "message": "CPU high", "groupKey": "g",
                    "alerts": [["status": "firing", "panelURL": "https://g.lan/p", "imageURL": "https://g.lan/i.png"]],
                ]
            },
            members: ["title", "message", "alerts.0.panelURL", "alerts.0.imageURL", "alerts.0.dashboardURL"]),
        BoundaryDialect(
            name: "Uptime Kuma hook", path: "/api/push/hooks/uptime-kuma", headers: { $0.bearer },
            body: { _ in
                [
                    "heartbeat": ["status": 0, "msg": "timeout"], "monitor": ["id": 7, "name": "Cloud", "url": "https://cloud.lan"],
                    "msg": "[Cloud] down",
                ]
            },
            members: ["heartbeat", "heartbeat.status", "heartbeat.msg", "monitor", "monitor.id", "monitor.name", "monitor.url", "msg"]),
    ]
}
