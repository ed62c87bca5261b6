import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 39, section 1: every member of PushWard's `CreateNotificationRequest` with its rules, unknown members refused,
/// `push: false`, and PushWard's 201, over real HTTP against the APNs double.
@Suite("POST /notifications: PushWard's members")
struct PushWardNotificationTests {
    @Test func everyPushWardMemberIsStoredAnsweredAndReachesAPNs() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice(number: 0x61)
            let created = try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device)
            #expect(created.status == .created)
            let body = #"""
                {"title": "Water leak", "body": "Basement sensor", "subtitle": "Utility room", "thread_id": "leaks",
                 "source": "ha", "collapse_id": "leak-1", "level": "critical", "volume": 0.4,
                 "media": {"url": "https://cam.example.com/leak.mp4", "type": "video"}, "icon_url": "https://ha.example.com/icon.png",
                 "metadata": {"sensor": "binary_sensor.leak", "room": "basement"}, "activity_slug": "oven", "tags": ["leak", "basement"],
                 "push": true, "url": "https://ha.example.com/",
                 "actions": [{"id": "ack", "title": "On my way", "text_input": true, "text_input_placeholder": "Note",
                              "text_input_button_title": "Send"}]}
                """#
            let response = try await client.activity(.post, "/notifications", body, as: device)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered" && json["pushed"] == true && json["delivery"] == "all")
            #expect(json["reason"] == nil)
            #expect(json["answerable"] == true && json["push"] == true)
            #expect(json["subtitle"] == "Utility room" && json["thread_id"] == "leaks" && json["collapse_id"] == "leak-1")
            #expect(json["media_url"] == "https://cam.example.com/leak.mp4" && json["media_type"] == "video")
            #expect(json["icon_url"] == "https://ha.example.com/icon.png" && json["activity_slug"] == "oven")
            #expect(json["metadata"] == ["sensor": "binary_sensor.leak", "room": "basement"])
            #expect(json["tags"] == ["leak", "basement"])
            #expect(json["volume"] == .double(0.4))
            #expect(json["level"] == "critical" && json["title"] == "Water leak" && json["body"] == "Basement sensor")
            #expect(json["created_at"]?.stringValue?.hasSuffix("Z") == true)
            #expect(json["actions"]?.arrayValue?.first?.objectValue?["text_input"] == true)

            let push = try #require(await apns.acceptedPush(id: json["id"]?.stringValue))
            #expect(push.header("apns-collapse-id") == "leak-1")
            let payload = try #require(try JSONValue.decode(push.body).objectValue)
            let aps = try #require(payload["aps"]?.objectValue)
            #expect(aps["alert"] == ["title": "Water leak", "subtitle": "Utility room", "body": "Basement sensor"])
            #expect(aps["thread-id"] == "leaks")
            #expect(aps["sound"] == ["critical": 1, "name": "default", "volume": .double(0.4)])
            #expect(aps["mutable-content"] == 1)
            #expect(payload["media_url"] == "https://cam.example.com/leak.mp4" && payload["media_type"] == "video")
            #expect(payload["metadata"] == ["sensor": "binary_sensor.leak", "room": "basement"])
            #expect(payload["activity_slug"] == "oven" && payload["icon_url"] == "https://ha.example.com/icon.png")
            let action = try #require(payload["actions"]?.arrayValue?.first?.objectValue)
            #expect(action["text_input"] == true && action["text_input_placeholder"] == "Note" && action["text_input_button_title"] == "Send")
            // What Herald keeps for itself (the sender's token, the tags) is not sent.
            #expect(payload["tags"] == nil && payload["meta"] == nil && payload["sender_token"] == nil)
        }
        try await apns.shutdown()
    }

    @Test func pushFalseIsKeptInTheInboxAndNotPushed() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice(number: 0x62)
            let response = try await client.activity(.post, "/notifications", #"{"title": "Quiet", "body": "For later", "push": false}"#, as: device)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["pushed"] == false && json["delivery"] == "none" && json["reason"] == "push_disabled")
            #expect(json["status"] == "stored" && json["push"] == false && json["answerable"] == false)
            #expect(json["rateLimits"]?.objectValue?["successful"] == 1)
            #expect(apns.production.acceptedPushes.isEmpty)
            let id = try #require(json["id"]?.stringValue)
            let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: device.owner.basic)
            #expect(try status.json()["status"] == "stored")
            let inbox = try await client.execute(uri: "/api/push/inbox", method: .get, headers: device.owner.basic)
            let items = try #require(try inbox.json()["items"]?.arrayValue)
            #expect(items.count == 1)
            #expect(items.first?.objectValue?["id"] == .string(id) && items.first?.objectValue?["state"] == "stored")
            #expect(apns.production.acceptedPushes.isEmpty)
        }
        try await apns.shutdown()
    }

    @Test func anActivitySlugThatIsNotThereIs422() async throws {
        try await TestServer().run { client in
            let device = try await client.activityDevice(number: 0x63)
            let response = try await client.activity(.post, "/notifications", #"{"title": "T", "body": "B", "activity_slug": "nope"}"#, as: device)
            #expect(response.status == .unprocessableContent)
            let json = try response.json()
            #expect(json["code"] == "activity_not_found" && json["field"] == "activity_slug")
            // Nothing was stored.
            let inbox = try await client.execute(uri: "/api/push/inbox", method: .get, headers: device.owner.basic)
            #expect(try inbox.json()["items"] == [])
        }
    }

    @Test(arguments: [
        (#""title": "T", "body": "B", "colour": "red""#, "colour"),
        (#""title": "T", "body": "B", "acknowledge": {"repeat": 30}"#, "acknowledge.repeat"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "style": "x"}]"#, "actions[0].style"),
        (#""title": "T", "body": "B", "media": {"url": "https://x.example/a.png", "type": "image", "size": 1}"#, "media.size"),
    ])
    func anUnknownMemberIs400NamingIt(members: String, field: String) async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let response = try await client.sendAction(token.bearer, body: "{" + members + "}")
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["code"] == "unknown_field")
            #expect(json["field"] == .string(field))
            #expect(json["error"]?.stringValue?.contains(field) == true)
            let inbox = try await client.execute(uri: "/api/push/inbox", method: .get, headers: owner.basic)
            #expect(try inbox.json()["items"] == [])
        }
    }

    @Test(arguments: [
        (#""title": "\#(String(repeating: "t", count: 257))", "body": "B""#, "title"),
        (#""title": "T", "body": "\#(String(repeating: "b", count: 4097))""#, "body"),
        (#""title": "T", "body": "B", "subtitle": "\#(String(repeating: "s", count: 257))""#, "subtitle"),
        (#""title": "T", "body": "B", "subtitle": 1"#, "subtitle"),
        (#""title": "T", "body": "B", "thread_id": "\#(String(repeating: "t", count: 129))""#, "thread_id"),
        (#""title": "T", "body": "B", "collapse_id": "\#(String(repeating: "c", count: 65))""#, "collapse_id"),
        (#""title": "T", "body": "B", "collapse_id": "a\nb""#, "collapse_id"),
        (#""title": "T", "body": "B", "collapse_id": "a", "notification_id": "b""#, "collapse_id"),
        (#""title": "T", "body": "B", "volume": 0.5"#, "volume"),
        (#""title": "T", "body": "B", "level": "critical", "volume": 1.5"#, "volume"),
        (#""title": "T", "body": "B", "level": "critical", "volume": -0.1"#, "volume"),
        (#""title": "T", "body": "B", "level": "critical", "volume": "loud""#, "volume"),
        (#""title": "T", "body": "B", "media": "https://x.example/a.png""#, "media"),
        (#""title": "T", "body": "B", "media": {"type": "image"}"#, "media.url"),
        (#""title": "T", "body": "B", "media": {"url": "https://x.example/a.png"}"#, "media.type"),
        (#""title": "T", "body": "B", "media": {"url": "https://x.example/a.png", "type": "gif"}"#, "media.type"),
        (#""title": "T", "body": "B", "media": {"url": "http://x.example/a.png", "type": "image"}"#, "media.url"),
        (#""title": "T", "body": "B", "media": {"url": "https://x.example/a.png", "type": "image"}, "image_url": "https://x.example/b.png""#, "media"),
        (#""title": "T", "body": "B", "icon_url": "ftp://x.example/i.png""#, "icon_url"),
        (#""title": "T", "body": "B", "metadata": ["a"]"#, "metadata"),
        (#""title": "T", "body": "B", "metadata": {"a": 1}"#, "metadata.a"),
        (#""title": "T", "body": "B", "metadata": {"a": "\#(String(repeating: "m", count: 513))"}"#, "metadata.a"),
        (#""title": "T", "body": "B", "metadata": {\#((0..<21).map { #""k\#($0)": "v""# }.joined(separator: ", "))}"#, "metadata"),
        (#""title": "T", "body": "B", "activity_slug": "-bad""#, "activity_slug"),
        (#""title": "T", "body": "B", "push": "no""#, "push"),
        (#""title": "T", "body": "B", "tags": "a""#, "tags"),
        (#""title": "T", "body": "B", "tags": [\#((0..<11).map { #""t\#($0)""# }.joined(separator: ", "))]"#, "tags"),
        (#""title": "T", "body": "B", "tags": ["ok", ""]"#, "tags[1]"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "text_input": "yes"}]"#, "actions[0].text_input"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "text_input": true, "foreground": true}]"#, "actions[0].text_input"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "text_input": true, "url": "shortcuts://x"}]"#, "actions[0].text_input"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "text_input_placeholder": "P"}]"#, "actions[0].text_input_placeholder"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "text_input": true, "text_input_button_title": "\#(String(repeating: "b", count: 65))"}]"#, "actions[0].text_input_button_title"),
    ])
    func everyPushWardRuleIsA400NamingTheField(members: String, field: String) async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let body = "{" + members + "}"
            let response = try await client.sendAction(token.bearer, body: body)
            #expect(response.status == .badRequest, "\(body)")
            let json = try response.json()
            #expect(json["code"] == "invalid_field", "\(body)")
            #expect(json["field"] == .string(field), "\(body)")
            #expect(response.rateLimit == .init(limit: 150, remaining: 150), "\(body)")
        }
    }

    @Test func theLimitsThemselvesAreAccepted() async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let metadata = (0..<20).map { #""k\#($0)": "v""# }.joined(separator: ", ")
            let tags = (0..<10).map { #""t\#($0)""# }.joined(separator: ", ")
            let bodies = [
                #"{"title": "\#(String(repeating: "t", count: 256))", "body": "\#(String(repeating: "b", count: 4096))"}"#,
                #"{"title": "T", "body": "B", "source": "\#(String(repeating: "s", count: 128))", "source_display_name": "\#(String(repeating: "d", count: 256))"}"#,
                #"{"title": "T", "body": "B", "metadata": {\#(metadata)}, "tags": [\#(tags)], "thread_id": "\#(String(repeating: "t", count: 128))"}"#,
                #"{"title": "T", "body": "B", "level": "critical", "volume": 0, "collapse_id": "same", "notification_id": "same"}"#,
                #"{"title": "T", "body": "B", "level": "critical", "volume": 1, "media": {"url": "https://x.example/a.mp3", "type": "audio"}}"#,
                #"{"title": "T", "body": "B", "push": false, "actions": [{"id": "r", "title": "Reply", "text_input": true, "url": "https://x.example/r"}]}"#,
                #"{"title": "T", "body": "B", "actions": null, "media": null, "metadata": null, "tags": null, "push": null, "volume": null}"#,
            ]
            for body in bodies {
                let response = try await client.sendAction(token.bearer, body: body)
                #expect(response.status == .created, "\(body)")
            }
        }
    }
}
