import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 39, section 6: the inbox the app reads with the device's credentials (every dialect), and the events it
/// reports, shown by the status API.
@Suite("Inbox and app events")
struct InboxTests {
    private func inbox(_ client: some TestClientProtocol, _ query: String = "", as owner: Registration) async throws -> TestResponse {
        try await client.execute(uri: "/api/push/inbox" + query, method: .get, headers: owner.basic)
    }

    @Test func theInboxListsEveryDialectOldestFirstInPages() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            var ids: [String] = []
            let camera = try await client.post("/api/push/notify", #"{"user_id": "\#(owner.userID)", "title": "Camera", "body": "Person"}"#)
            #expect(camera.status == .created)
            ids.append(try #require(try camera.json()["id"]?.stringValue))
            let pushWard = try await client.sendAction(token.bearer, body: #"{"title": "PushWard", "body": "Sent", "actions": [{"id": "ok", "title": "OK"}]}"#)
            ids.append(try #require(try pushWard.json()["id"]?.stringValue))
            let kept = try await client.sendAction(token.bearer, body: #"{"title": "Kept", "body": "Not pushed", "push": false}"#)
            ids.append(try #require(try kept.json()["id"]?.stringValue))
            let homeAssistant = try await client.post("/api/push/homeassistant", homeAssistantBody(owner.userID, message: "Door", title: "HA"))
            #expect(homeAssistant.status.code < 300)

            // Someone else's notifications are not in this inbox.
            let stranger = try await client.register(token: Fixtures.apnsToken(4))
            _ = try await client.post("/api/push/notify", #"{"user_id": "\#(stranger.userID)", "title": "Other", "body": "Not yours"}"#)

            let all = try await inbox(client, as: owner)
            #expect(all.status == .ok)
            let items = try #require(try all.json()["items"]?.arrayValue?.compactMap(\.objectValue))
            #expect(items.map { $0["title"] } == ["Camera", "PushWard", "Kept", "HA"])
            #expect(Array(items.prefix(3).map { $0["id"] }) == ids.map(JSONValue.string))
            #expect(items[2]["state"] == "stored" && items[2]["body"] == "Not pushed")
            #expect(items[0]["read"] == false && items[1]["answer"] == .null)
            #expect(Set(items[0].keys) == ["id", "title", "body", "state", "read", "answer", "created_at"])
            #expect(try all.json()["next_cursor"] == .null)

            let first = try await inbox(client, "?limit=2", as: owner)
            #expect(try first.json()["items"]?.arrayValue?.count == 2)
            let cursor = try #require(try first.json()["next_cursor"]?.stringValue)
            let second = try await inbox(client, "?limit=2&after=\(cursor)", as: owner)
            #expect(try second.json()["items"]?.arrayValue?.compactMap { $0.objectValue?["title"] } == ["Kept", "HA"])
            let third = try await inbox(client, "?limit=2&after=\(try #require(try second.json()["next_cursor"]?.stringValue))", as: owner)
            #expect(try third.json()["items"] == [] && third.json()["next_cursor"] == .null)

            for query in ["?limit=0", "?limit=101", "?limit=x", "?after=nope"] {
                let refused = try await inbox(client, query, as: owner)
                #expect(refused.status == .badRequest, "\(query)")
            }
            // Owner credentials only.
            let bearer = try await client.execute(uri: "/api/push/inbox", method: .get, headers: token.bearer)
            #expect(bearer.status.code >= 400)
            let noCredentials = try await client.execute(uri: "/api/push/inbox", method: .get)
            #expect(noCredentials.status.code >= 400)
        }
    }

    @Test func theAppReportsEventsAndTheStatusAPIAndInboxShowThem() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let sent = try await client.sendAction(token.bearer, body: #"{"title": "T", "body": "B", "actions": [{"id": "ok", "title": "OK"}]}"#)
            let id = try #require(try sent.json()["id"]?.stringValue)
            for event in ["delivered", "opened", "read", "delivered"] {
                let response = try await client.post("/api/push/notifications/\(id)/events", #"{"event": "\#(event)"}"#, headers: owner.basic)
                #expect(response.status == .noContent, "\(event)")
            }
            _ = try await client.post("/api/push/notifications/\(id)/answer", #"{"action_id": "ok"}"#, headers: owner.basic)

            let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: token.bearer)
            let events = try #require(try status.json()["events"]?.arrayValue?.compactMap(\.objectValue))
            #expect(events.map { $0["event"] } == ["delivered", "opened", "read"])
            #expect(events.allSatisfy { $0["at"]?.stringValue?.hasSuffix("Z") == true })
            let item = try #require(try await inbox(client, as: owner).json()["items"]?.arrayValue?.first?.objectValue)
            #expect(item["read"] == true)
            #expect(item["answer"]?.objectValue?["action_id"] == "ok")

            for body in [#"{"event": "seen"}"#, #"{}"#, #"{"event": "read", "at": 1}"#, #"{"event": 1}"#] {
                let refused = try await client.post("/api/push/notifications/\(id)/events", body, headers: owner.basic)
                #expect(refused.status == .badRequest, "\(body)")
            }
            let stranger = try await client.register(token: Fixtures.apnsToken(5))
            let foreign = try await client.post("/api/push/notifications/\(id)/events", #"{"event": "read"}"#, headers: stranger.basic)
            #expect(foreign.status == .notFound)
            let viaToken = try await client.post("/api/push/notifications/\(id)/events", #"{"event": "read"}"#, headers: token.bearer)
            #expect(viaToken.status.code >= 400)
        }
    }

    @Test func theDashboardShowsTheEventsAndTheAnswer() async throws {
        try await AdminDashboardTests.server().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let sent = try await client.sendAction(
                token.bearer, body: #"{"title": "T", "body": "B", "actions": [{"id": "ack", "title": "OK", "text_input": true}]}"#)
            let id = try #require(try sent.json()["id"]?.stringValue)
            _ = try await client.post("/api/push/notifications/\(id)/events", #"{"event": "opened"}"#, headers: owner.basic)
            _ = try await client.post("/api/push/notifications/\(id)/answer", #"{"action_id": "ack", "text": "<i>soon</i>"}"#, headers: owner.basic)
            let session = try await client.adminLogin()
            let page = try await client.execute(uri: "/admin/notification?id=\(id)", method: .get, headers: session.headers)
            #expect(page.status == .ok)
            #expect(page.text.contains("The app reported: opened."))
            #expect(page.text.contains("Answered: ack with text &quot;&lt;i&gt;soon&lt;/i&gt;&quot;."))
        }
    }
}
