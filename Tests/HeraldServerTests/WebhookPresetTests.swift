import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /api/push/hooks/{preset}` with payloads written from each tool's documented format (Fixtures/senders/README.md):
/// what reached the APNs double, and the collapse id that lets a resolution replace its alarm.
@Suite("Webhook presets")
struct WebhookPresetTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/senders")

    static func fixture(_ name: String) throws -> String {
        try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    /// Posts a fixture and returns the payload and the push the double accepted for it.
    static func deliver(
        _ fixture: String, preset: String, token: String, client: some TestClientProtocol, apns: APNsTestServer, query: String = ""
    ) async throws -> (payload: JSONObject, push: APNsDouble.RecordedRequest) {
        let response = try await client.post(
            "/api/push/hooks/\(preset)?\(query)", try Self.fixture(fixture), headers: [.authorization: "Bearer \(token)"])
        #expect(response.status == .created, "\(String(buffer: response.body))")
        let id = try response.json()["id"]?.stringValue
        let push = try #require(await apns.acceptedPush(id: id))
        return (try #require(try JSONValue.decode(push.body).objectValue), push)
    }

    @Test func alertmanagerFiringThenResolvedShareTheCollapseID() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let token = try await client.createToken(for: try await client.register(token: Fixtures.apnsToken(0x81))).token
            let firing = try await Self.deliver("alertmanager-firing.json", preset: "alertmanager", token: token, client: client, apns: apns)
            #expect(firing.payload.aps["alert"] == [
                "title": "[FIRING:2] DiskFull",
                "body": "2 alerts, 2 firing:\n• Disk on nas is 97% full (firing)\n• Disk on backup is 96% full (firing)",
            ])
            #expect(firing.payload.aps["interruption-level"] == "time-sensitive" && firing.payload.aps["thread-id"] == "alertmanager")
            #expect(firing.payload["url"] == "https://alertmanager.example.com")
            let collapseID = try #require(firing.push.header("apns-collapse-id"))
            #expect(collapseID.hasPrefix("alert-") && collapseID.utf8.count == 38)

            let resolved = try await Self.deliver("alertmanager-resolved.json", preset: "alertmanager", token: token, client: client, apns: apns)
            #expect(resolved.payload.aps["alert"]?.objectValue?["title"] == "[RESOLVED] DiskFull")
            #expect(resolved.payload.aps["interruption-level"] == "passive")
            #expect(resolved.push.header("apns-collapse-id") == collapseID)
        }
        try await apns.shutdown()
    }

    @Test func grafanaUsesItsTitleMessagePanelAndImage() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let token = try await client.createToken(for: try await client.register(token: Fixtures.apnsToken(0x82))).token
            let firing = try await Self.deliver("grafana-firing.json", preset: "grafana", token: token, client: client, apns: apns)
            let alert = try #require(firing.payload.aps["alert"]?.objectValue)
            #expect(alert["title"] == "[FIRING:1] High CPU Servers (web-1)")
            #expect(alert["body"]?.stringValue?.hasPrefix("**Firing**") == true)
            #expect(firing.payload["url"] == "https://grafana.example.com/d/abc123?orgId=1&viewPanel=2")
            #expect(firing.payload["image_url"] == "https://grafana.example.com/public/img/attachments/panel.png")
            #expect(firing.payload.aps["interruption-level"] == "active")
            let resolved = try await Self.deliver("grafana-resolved.json", preset: "grafana", token: token, client: client, apns: apns)
            #expect(resolved.payload.aps["alert"]?.objectValue?["title"] == "[RESOLVED] High CPU Servers (web-1)")
            #expect(resolved.push.header("apns-collapse-id") == firing.push.header("apns-collapse-id"))
            #expect(firing.push.header("apns-collapse-id") != nil)
        }
        try await apns.shutdown()
    }

    @Test func uptimeKumaDownThenUpAndTheGenericPreset() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let token = try await client.createToken(for: try await client.register(token: Fixtures.apnsToken(0x83))).token
            let down = try await Self.deliver("uptime-kuma-down.json", preset: "uptime-kuma", token: token, client: client, apns: apns)
            #expect(down.payload.aps["alert"] == ["title": "Nextcloud is down", "body": "connect ECONNREFUSED 10.0.0.5:443"])
            #expect(down.payload.aps["interruption-level"] == "time-sensitive" && down.push.header("apns-collapse-id") == "kuma-7")
            // ?token= for tools that cannot set a header.
            let response = try await client.post("/api/push/hooks/uptime-kuma?token=\(token)", try Self.fixture("uptime-kuma-up.json"))
            let up = try #require(await apns.acceptedPush(id: try response.json()["id"]?.stringValue))
            #expect(try JSONValue.decode(up.body).objectValue?.aps["alert"] == ["title": "Nextcloud is up", "body": "200 - OK"])
            #expect(up.header("apns-collapse-id") == "kuma-7")

            let generic = try await client.post(
                "/api/push/hooks/generic?title=$.event.name&body=$.event.details[1]&collapse=$.event.id&level=passive",
                #"{"event": {"name": "Jellyfin", "id": "job-4", "details": ["ignored", "Library scan done"]}}"#,
                headers: [.authorization: "Bearer \(token)"])
            #expect(generic.status == .created)
            let push = try #require(await apns.acceptedPush(id: try generic.json()["id"]?.stringValue))
            let payload = try #require(try JSONValue.decode(push.body).objectValue)
            #expect(payload.aps["alert"] == ["title": "Jellyfin", "body": "Library scan done"] && payload.aps["interruption-level"] == "passive")
            #expect(push.header("apns-collapse-id") == "job-4")
        }
        try await apns.shutdown()
    }

    @Test func theSendersAreCountedAsOneDialectWithoutTheirCredentials() async throws {
        let server = try TestServer()
        let (text, secrets) = try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner).token
            #expect(try await client.ntfy("/\(owner.userID)", body: "ntfy").status == .ok)
            #expect(try await client.post("/", #"{"topic": "\#(owner.userID)", "message": "ntfy JSON"}"#).status == .ok)
            #expect(try await client.post("/push", #"{"device_key": "\#(owner.userID)", "body": "Bark"}"#).status == .ok)
            #expect(try await client.post("/message?token=\(token)", #"{"message": "Gotify"}"#).status == .ok)
            #expect(try await client.post("/api/push/hooks/generic?token=\(token)", #"{"message": "hook"}"#).status == .created)
            #expect(try await client.post("/push", #"{"device_key": "\#(owner.userID)"}"#).status == .badRequest)
            let response = try await client.execute(uri: "/metrics", method: .get)
            return (String(decoding: response.body.readableBytesView, as: UTF8.self), [owner.userID, token])
        }
        for secret in secrets { #expect(!text.contains(secret), "a credential in the exposition") }
        let samples = Exposition(text)
        #expect(samples["herald_notifications_accepted_total{dialect=\"senders\"}"] == 5)
        #expect(samples["herald_notifications_rejected_total{dialect=\"senders\",reason=\"invalid_field\"}"] == 1)
    }

    @Test func refusalsAreHeraldsAnswers() async throws {
        let server = try TestServer()
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register()).token
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            var response = try await client.post("/api/push/hooks/nagios", "{}", headers: bearer)
            #expect(response.status == .notFound)
            #expect(try response.json()["code"] == "not_found")
            response = try await client.post("/api/push/hooks/alertmanager", try WebhookPresetTests.fixture("alertmanager-firing.json"))
            #expect(response.status == .unauthorized)
            #expect(try response.json()["code"] == "token_required")
            response = try await client.post("/api/push/hooks/alertmanager", #"{"status": "firing"}"#, headers: bearer)
            #expect(response.status == .badRequest)
            #expect(try response.json()["field"] == "alerts")
            response = try await client.post("/api/push/hooks/generic?body=$.nothing", #"{"a": 1}"#, headers: bearer)
            #expect(response.status == .badRequest)
            #expect(try response.json()["field"] == "body")
            response = try await client.post("/api/push/hooks/generic?body=$.a[x]", #"{"a": [1]}"#, headers: bearer)
            #expect(response.status == .badRequest)
            response = try await client.post("/api/push/hooks/uptime-kuma", #"{"heartbeat": {"status": 9}}"#, headers: bearer)
            #expect(response.status == .badRequest)
            #expect(try response.json()["field"] == "heartbeat.status")
            response = try await client.post("/api/push/hooks/grafana", "not json", headers: bearer)
            #expect(response.status == .badRequest)
            #expect(try response.json()["code"] == "malformed_json")
        }
    }
}
