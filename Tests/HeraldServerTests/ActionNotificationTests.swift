import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

@Suite("POST /notifications")
struct ActionNotificationTests {
    @Test(arguments: SeedCurlExamples.withPayloads)
    func seedExamplesAreAcceptedAndStoredAsDocumented(command: String, payload: String) async throws {
        let server = try TestServer()
        let id = try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let curl = try CurlRequest(command, token: token.token)
            #expect(curl.path == "/notifications")
            let response = try await client.execute(
                uri: curl.path, method: curl.method, headers: curl.headers, body: ByteBuffer(string: curl.body))
            #expect(response.status == .created)
            let json = try response.json()
            // The answer of /api/push/notify and PushWard's fan-out members: no APNs key is configured here, so stored
            // and queued, not yet pushed.
            // … and PushWard's Notification: what was stored, created_at, answerable (issue 39).
            let base: Set<String> = ["id", "status", "truncated", "rateLimits", "warning", "pushed", "delivery"]
            let pushWard: Set<String> = ["title", "body", "level", "push", "created_at", "answerable", "actions"]
            #expect(Set(json.keys).subtracting(["source", "source_display_name"]) == base.union(pushWard))
            #expect(json["answerable"] == .bool(curl.body.contains(#""id": "ignore""#)))
            #expect(json["status"] == "queued")
            #expect(json["pushed"] == false && json["delivery"] == "none")
            #expect(json["truncated"] == false)
            #expect(json["rateLimits"]?.objectValue?["successful"] == 1)
            #expect(response.headers[.init("RateLimit-Limit")!] == "150")
            #expect(response.headers[.init("RateLimit-Remaining")!] == "149")
            return try #require(json["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(String(decoding: stored.payload, as: UTF8.self) == payload)
        #expect(stored.collapseID == nil)
        #expect(stored.pushType == .alert)
        #expect(stored.priority == 10)
        #expect(stored.status == .pending)
        #expect(stored.quotaDay != nil)
    }

    @Test(arguments: SeedCurlExamples.withPayloads)
    func seedExamplesReachAPNsAsDocumented(command: String, payload: String) async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x51))
            let token = try await client.createToken(for: owner)
            let curl = try CurlRequest(command, token: token.token)
            let response = try await client.execute(
                uri: curl.path, method: curl.method, headers: curl.headers, body: ByteBuffer(string: curl.body))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered")
            #expect(json["pushed"] == true && json["delivery"] == "all")
            #expect(json["warning"] == nil)

            let push = try #require(apns.production.acceptedPushes.first)
            #expect(apns.production.acceptedPushes.count == 1)
            #expect(push.path == "/3/device/\(Fixtures.apnsToken(0x51))")
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-priority") == "10")
            #expect(push.header("apns-collapse-id") == nil)
            #expect(push.header("apns-id") == json["id"]?.stringValue)
            #expect(String(decoding: push.body, as: UTF8.self) == payload)
        }
        try await apns.shutdown()
    }

    @Test func theNotificationIDIsTheCollapseIDAtAPNs() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let token = try await client.createToken(for: try await client.register(token: Fixtures.apnsToken(0x52)))
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "Smoke", "body": "Kitchen", "level": "critical", "notification_id": "smoke-kitchen"}"#)
            #expect(try response.json()["status"] == "delivered")
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(push.header("apns-collapse-id") == "smoke-kitchen")
            #expect(
                String(decoding: push.body, as: UTF8.self)
                    == #"{"aps":{"alert":{"body":"Kitchen","title":"Smoke"},"interruption-level":"critical","sound":{"critical":1,"name":"default","volume":1}},"notification_id":"smoke-kitchen"}"#
            )
        }
        try await apns.shutdown()
    }

    @Test func everyOptionalFieldReachesThePayload() async throws {
        let server = try TestServer()
        let id = try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let body = #"""
                {"title": "Garage", "body": "Left open", "source": "ha.garage", "source_display_name": "Garage door",
                 "level": "passive", "image_url": " https://cam.local/garage.jpg ", "url": "homeassistant://navigate/garage",
                 "notification_id": "garage-1",
                 "actions": [{"id": "close", "title": "Close", "url": "HTTPS://ha.local/close", "method": "post",
                              "headers": {"content-type": "text/plain", "X-Empty": ""}, "body": "close",
                              "icon": null, "destructive": null, "foreground": true}]}
                """#
            let response = try await client.sendAction(token.bearer, body: body)
            #expect(response.status == .created)
            return try #require(try response.json()["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(
            String(decoding: stored.payload, as: UTF8.self)
                == #"{"actions":[{"authentication_required":false,"body":"close","destructive":false,"foreground":true,"headers":{"X-Empty":"","content-type":"text/plain"},"id":"close","method":"POST","title":"Close","url":"HTTPS://ha.local/close"}],"aps":{"alert":{"body":"Left open","title":"Garage"},"category":"HERALD_ACTIONS","interruption-level":"passive","mutable-content":1,"sound":"default","thread-id":"ha.garage"},"image_url":"https://cam.local/garage.jpg","notification_id":"garage-1","source":"ha.garage","source_display_name":"Garage door","url":"homeassistant://navigate/garage"}"#
        )
        #expect(stored.collapseID == "garage-1")
    }

    @Test func anImageWithoutActionsIsMutableWithoutACategory() async throws {
        let server = try TestServer()
        let id = try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "T", "body": "B", "image_url": "http://cam.local/a.jpg", "actions": []}"#)
            #expect(response.status == .created)
            return try #require(try response.json()["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(
            String(decoding: stored.payload, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"B","title":"T"},"interruption-level":"active","mutable-content":1,"sound":"default"},"image_url":"http://cam.local/a.jpg"}"#
        )
    }

    @Test func criticalAlertsHaveACriticalSoundAndAreExemptFromTheDailyLimit() async throws {
        let server = try TestServer(dailyLimit: 1)
        let id = try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            #expect(try await client.sendAction(token.bearer).status == .created)
            let limited = try await client.sendAction(token.bearer)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
            #expect(try limited.json()["code"] == "rate_limited")

            let critical = try await client.sendAction(token.bearer, body: #"{"title": "Smoke", "body": "Kitchen", "level": "critical"}"#)
            #expect(critical.status == .created)
            #expect(try critical.json()["rateLimits"]?.objectValue?["successful"] == 1)
            return try #require(try critical.json()["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(
            String(decoding: stored.payload, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"Kitchen","title":"Smoke"},"interruption-level":"critical","sound":{"critical":1,"name":"default","volume":1}}}"#
        )
        #expect(stored.quotaDay == nil)
    }

    @Test func validEdgeCasesAreAccepted() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let tenActions = (0..<10).map { #"{"id": "a\#($0)", "title": "A\#($0)"}"# }.joined(separator: ", ")
            let name64 = String(repeating: "n", count: 64)
            let headers1024 = #"{"X": "\#(String(repeating: "v", count: 1023))"}"#
            // Each accepted body, and members of the payload APNs received for it (nil: absent).
            let cases: [(String, [(String, JSONValue?)])] = [
                (#""actions": [\#(tenActions)]"#, [("actions.9.id", "a9"), ("actions.9.title", "A9"), ("aps.category", "HERALD_ACTIONS")]),
                (#""actions": [{"id": "\#(name64)", "title": "\#(name64)"}], "notification_id": "\#(name64)""#,
                 [("actions.0.id", .string(name64)), ("actions.0.title", .string(name64)), ("notification_id", .string(name64))]),
                (#""actions": [{"id": "a", "title": "A", "headers": \#(headers1024), "body": "\#(String(repeating: "b", count: 1024))"}]"#,
                 [("actions.0.headers.X", .string(String(repeating: "v", count: 1023))), ("actions.0.body", .string(String(repeating: "b", count: 1024)))]),
                (#""actions": [{"id": "a", "title": "A", "url": "tel:+15551234567"}, {"id": "b", "title": "B", "url": "mailto:a@example.com"}]"#,
                 [("actions.0.url", "tel:+15551234567"), ("actions.1.url", "mailto:a@example.com")]),
                (#""actions": [{"id": "a", "title": "A", "url": "shortcuts://run-shortcut?name=Lights", "method": "DELETE", "headers": {}}]"#,
                 [("actions.0.url", "shortcuts://run-shortcut?name=Lights")]),
                (#""actions": [{"id": "a", "title": "A", "url": "  https://x.example/ok  ", "foreground": true, "icon": "1.circle.fill"}]"#,
                 [("actions.0.foreground", true), ("actions.0.icon", "1.circle.fill")]),
                (#""actions": null, "level": "time-sensitive", "source": "", "url": "https://example.com""#,
                 [("actions", nil), ("aps.interruption-level", "time-sensitive"), ("url", "https://example.com"), ("source", nil)]),
                (#""level": null, "image_url": "", "notification_id": null"#,
                 [("aps.interruption-level", "active"), ("image_url", nil), ("notification_id", nil), ("aps.mutable-content", nil)]),
            ]
            for (extra, members) in cases {
                let response = try await client.sendAction(token.bearer, body: #"{"title": "T", "body": "B", \#(extra)}"#)
                #expect(response.status == .created, "\(extra)")
                let payload = try await apns.acceptedPayload(id: try response.json()["id"]?.stringValue)
                #expect(payload?["aps"]?.objectValue?["alert"] == ["title": "T", "body": "B"], "\(extra)")
                for (path, expected) in members {
                    #expect(payload.flatMap { member(path, of: .object($0)) } == expected, "\(path) of \(extra)")
                }
            }
        }
        try await apns.shutdown()
    }

    /// The member at a dotted path (`actions.0.id`: array indexes as numbers).
    private func member(_ path: String, of value: JSONValue) -> JSONValue? {
        path.split(separator: ".").reduce(value as JSONValue?) { value, key in
            switch value {
            case .object(let object)?: object[String(key)]
            case .array(let array)?: Int(key).flatMap { array.indices.contains($0) ? array[$0] : nil }
            default: nil
            }
        }
    }

    @Test(arguments: [
        (#""body": "B""#, "title"),
        (#""title": "", "body": "B""#, "title"),
        (#""title": 1, "body": "B""#, "title"),
        (#""title": "T""#, "body"),
        (#""title": "T", "body": """#, "body"),
        (#""title": "T", "body": ["B"]"#, "body"),
        (#""title": "T", "body": "B", "source": "\#(String(repeating: "s", count: 129))""#, "source"),
        (#""title": "T", "body": "B", "source": 5"#, "source"),
        (#""title": "T", "body": "B", "source_display_name": "\#(String(repeating: "s", count: 257))""#, "source_display_name"),
        (#""title": "T", "body": "B", "level": "loud""#, "level"),
        (#""title": "T", "body": "B", "level": "Critical""#, "level"),
        (#""title": "T", "body": "B", "level": 1"#, "level"),
        (#""title": "T", "body": "B", "image_url": "ftp://cam.local/a.jpg""#, "image_url"),
        (#""title": "T", "body": "B", "image_url": "homeassistant://a.jpg""#, "image_url"),
        (#""title": "T", "body": "B", "image_url": "not a url""#, "image_url"),
        (#""title": "T", "body": "B", "image_url": "https:///a.jpg""#, "image_url"),
        (#""title": "T", "body": "B", "url": "javascript:alert(1)""#, "url"),
        (#""title": "T", "body": "B", "url": " JavaScript:alert(1)""#, "url"),
        (#""title": "T", "body": "B", "url": "/relative/path""#, "url"),
        (#""title": "T", "body": "B", "notification_id": "\#(String(repeating: "x", count: 65))""#, "notification_id"),
        (#""title": "T", "body": "B", "notification_id": "\#(String(repeating: "é", count: 33))""#, "notification_id"),
        (#""title": "T", "body": "B", "actions": "approve""#, "actions"),
        (#""title": "T", "body": "B", "actions": {"id": "a", "title": "A"}"#, "actions"),
        (#""title": "T", "body": "B", "actions": [\#((0..<11).map { #"{"id": "a\#($0)", "title": "A"}"# }.joined(separator: ","))]"#, "actions"),
        (#""title": "T", "body": "B", "actions": [1]"#, "actions[0]"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A"}, null]"#, "actions[1]"),
        (#""title": "T", "body": "B", "actions": [{"title": "A"}]"#, "actions[0].id"),
        (#""title": "T", "body": "B", "actions": [{"id": "", "title": "A"}]"#, "actions[0].id"),
        (#""title": "T", "body": "B", "actions": [{"id": 5, "title": "A"}]"#, "actions[0].id"),
        (#""title": "T", "body": "B", "actions": [{"id": "\#(String(repeating: "i", count: 65))", "title": "A"}]"#, "actions[0].id"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A"}, {"id": "b", "title": "B"}, {"id": "a", "title": "C"}]"#, "actions[2].id"),
        (#""title": "T", "body": "B", "actions": [{"id": "a"}]"#, "actions[0].title"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": ""}]"#, "actions[0].title"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "\#(String(repeating: "t", count: 65))"}]"#, "actions[0].title"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "icon": "check mark"}]"#, "actions[0].icon"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "icon": "checkmark..circle"}]"#, "actions[0].icon"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "icon": 3}]"#, "actions[0].icon"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A"}, {"id": "b", "title": "B"}, {"id": "c", "title": "C", "url": "javascript:alert(1)"}]"#, "actions[2].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "  JAVASCRIPT:alert(1)"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "\tjavascript:alert(1)\n"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "java\nscript:alert(1)"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "DATA:text/html,<b>hi</b>"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "File:///etc/passwd"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "https://x.example/\#(String(repeating: "p", count: 2031))"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "no scheme here"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "https://exa mple.com/"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": "https://"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "url": 7}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "foreground": true, "url": "homeassistant://navigate"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "foreground": true, "url": "http://ha.local/unlock"}]"#, "actions[0].url"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "foreground": "yes"}]"#, "actions[0].foreground"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "destructive": 1}]"#, "actions[0].destructive"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "authentication_required": "true"}]"#, "actions[0].authentication_required"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "method": "FETCH"}]"#, "actions[0].method"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "method": 1}]"#, "actions[0].method"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": "Authorization: x"}]"#, "actions[0].headers"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": ["x"]}]"#, "actions[0].headers"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"X-Count": 1}}]"#, "actions[0].headers.X-Count"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"X-Null": null}}]"#, "actions[0].headers.X-Null"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"Bad Name": "v"}}]"#, "actions[0].headers"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"": "v"}}]"#, "actions[0].headers"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"X-Inject": "a\r\nHost: evil"}}]"#, "actions[0].headers.X-Inject"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"X-A": "1", "x-a": "2"}}]"#, "actions[0].headers.x-a"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "headers": {"X": "\#(String(repeating: "v", count: 1024))"}}]"#, "actions[0].headers"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "body": "\#(String(repeating: "b", count: 1025))"}]"#, "actions[0].body"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "body": "\#(String(repeating: "é", count: 513))"}]"#, "actions[0].body"),
        (#""title": "T", "body": "B", "actions": [{"id": "a", "title": "A", "body": {"entity_id": "cover.x"}}]"#, "actions[0].body"),
    ])
    func everyRuleIsA400NamingTheField(members: String, field: String) async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let body = "{" + members + "}"
            let response = try await client.sendAction(token.bearer, body: body)
            #expect(response.status == .badRequest, "\(body)")
            let json = try response.json()
            #expect(json["code"] == "invalid_field", "\(body)")
            #expect(json["field"] == .string(field), "\(body)")
            #expect(json["error"]?.stringValue?.contains(field) == true, "\(body)")
            // Refused after the token named the device: its quota is in the headers.
            #expect(response.rateLimit == .init(limit: 150, remaining: 150), "\(body)")
        }
    }

    @Test func malformedAndOversizedBodies() async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let malformed = try await client.sendAction(token.bearer, body: #"{"title": "#)
            #expect(malformed.status == .badRequest)
            #expect(try malformed.json()["field"] == "$")
            let array = try await client.sendAction(token.bearer, body: #"[{"title": "T", "body": "B"}]"#)
            #expect(array.status == .badRequest)
            #expect(try array.json()["code"] == "malformed_json")
            let huge = try await client.sendAction(token.bearer, body: #"{"title": "T", "body": "\#(String(repeating: "x", count: 70_000))"}"#)
            #expect(huge.status == .contentTooLarge)
        }
    }

    @Test func aLongBodyIsShortenedAndTheActionsKeptWhole() async throws {
        let server = try TestServer()
        let (id, actions) = try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let actions = (0..<10).map {
                #"{"id": "action-\#($0)", "title": "Action \#($0)", "url": "https://ha.local/api/\#(String(repeating: "p", count: 150))/\#($0)"}"#
            }
            let body = #"{"title": "T", "body": "\#(String(repeating: "🐦 bird ", count: 300))", "actions": [\#(actions.joined(separator: ","))]}"#
            let response = try await client.sendAction(token.bearer, body: body)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["truncated"] == true)
            return (try #require(json["id"]?.stringValue.flatMap(UUID.init(uuidString:))), actions.count)
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(stored.payload.count <= 4096)
        let payload = try #require(try JSONValue.decode(stored.payload).objectValue)
        let body = try #require(payload["aps"]?.objectValue?["alert"]?.objectValue?["body"]?.stringValue)
        #expect(body.hasSuffix("…"))
        guard case .array(let storedActions) = try #require(payload["actions"]) else { throw TestFailure("actions is not an array") }
        #expect(storedActions.count == actions)
    }

    @Test func actionsThatCannotFitAre400SayingSo() async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let actions = (0..<10).map {
                #"{"id": "a\#($0)", "title": "A", "url": "https://ha.local/\#(String(repeating: "p", count: 1000))", "body": "\#(String(repeating: "b", count: 1000))"}"#
            }
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "T", "body": "B", "actions": [\#(actions.joined(separator: ","))]}"#)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["code"] == "payload_too_large")
            #expect(json["field"] == "actions")
            #expect(json["error"]?.stringValue?.contains("actions") == true)

            // Without actions, oversized metadata (9 × 500 characters, within its own rules) is refused with the general message.
            let metadata = (0..<9).map { #""k\#($0)": "\#(String(repeating: "m", count: 500))""# }.joined(separator: ", ")
            let title = try await client.sendAction(token.bearer, body: #"{"title": "T", "body": "B", "metadata": {\#(metadata)}}"#)
            #expect(title.status == .badRequest)
            #expect(try title.json()["code"] == "payload_too_large")
            #expect(try title.json()["field"] == "$")
        }
    }
}
