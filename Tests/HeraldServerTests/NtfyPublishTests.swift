import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// ntfy's publishing API over real HTTP: what each request of ntfy's documentation (docs/publish.md, the curl lines)
/// answers and what reached the APNs double.
@Suite("ntfy publishing")
struct NtfyPublishTests {
    @Test func curlLinesOfNtfysDocumentationReachThePhone() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let topic = try await client.register(token: Fixtures.apnsToken(0x61)).userID
            // curl -d "Backup successful 😀" ntfy.sh/mytopic
            var response = try await client.ntfy("/\(topic)", body: "Backup successful 😀", contentType: "application/x-www-form-urlencoded")
            #expect(response.status == .ok)
            var json = try response.json()
            #expect(json["event"] == "message" && json["topic"] == .string(topic) && json["message"] == "Backup successful 😀")
            #expect(json["time"]?.doubleValue != nil && json["expires"]?.doubleValue != nil)
            #expect(json["priority"] == nil && json["title"] == nil)
            var payload = try #require(try await apns.acceptedPayload(id: json["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["body": "Backup successful 😀"])
            #expect(payload.aps["interruption-level"] == "active" && payload.aps["sound"] == "default")

            // curl -H "Title: Unauthorized access detected" -H "Priority: urgent" -H "Tags: warning,skull" -d "…" ntfy.sh/phil_alerts
            response = try await client.ntfy(
                "/\(topic)", body: "Remote access to phils-laptop detected. Act right away.",
                headers: ["Title": "Unauthorized access detected", "Priority": "urgent", "Tags": "warning,skull"])
            json = try response.json()
            #expect(response.status == .ok && json["priority"] == 5 && json["tags"] == ["warning", "skull"])
            payload = try #require(try await apns.acceptedPayload(id: json["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "⚠️💀 Unauthorized access detected", "body": "Remote access to phils-laptop detected. Act right away."])
            #expect(payload.aps["interruption-level"] == "time-sensitive")

            // curl -H "X-Tags: warning,mailsrv13,daily-backup" -d "Backup of mailsrv13 failed" (a tag that is no emoji stays a tag)
            response = try await client.ntfy("/\(topic)", body: "Backup of mailsrv13 failed", headers: ["X-Tags": "warning,mailsrv13,daily-backup"])
            payload = try #require(try await apns.acceptedPayload(id: try response.json()["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["body": "⚠️ Backup of mailsrv13 failed"])
            #expect(payload["tags"] == ["mailsrv13", "daily-backup"])

            // curl ntfy.sh/mywebhook/publish?message=…&priority=low&t=… (GET, lowercase query parameters, aliases)
            response = try await client.execute(uri: "/\(topic)/trigger?m=Door+opened&p=low&t=Front%20door&ta=door", method: .get)
            json = try response.json()
            #expect(response.status == .ok && json["priority"] == 2 && json["title"] == "Front door")
            payload = try #require(try await apns.acceptedPayload(id: json["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "🚪 Front door", "body": "Door opened"])
            #expect(payload.aps["interruption-level"] == "passive" && payload.aps["sound"] == nil)
            #expect(apns.production.acceptedPushes.last?.header("apns-priority") == "5")

            // RFC 2047 encoded words and case-insensitive names (docs/publish.md, "List of all parameters").
            response = try await client.ntfy("/\(topic)/publish", body: "Äpfel", headers: ["x-TITLE": "=?UTF-8?B?8J+HqfCfh6o=?= =?UTF-8?Q?=C3=84pfel?="], method: .put)
            payload = try #require(try await apns.acceptedPayload(id: try response.json()["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "🇩🇪Äpfel", "body": "Äpfel"])

            // An empty body is ntfy's "triggered".
            response = try await client.ntfy("/\(topic)", body: "", method: .put)
            #expect(try response.json()["message"] == "triggered")
        }
        try await apns.shutdown()
    }

    @Test func clickAttachIconActionsAndMarkdown() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let topic = try await client.register(token: Fixtures.apnsToken(0x62)).userID
            let response = try await client.ntfy(
                "/\(topic)", body: "**Disk** is _full_",
                headers: [
                    "Click": "https://home.nest.com/", "Attach": "https://example.com/camera.jpg", "Icon": "https://example.com/icon.png",
                    "Markdown": "yes", "Email": "phil@example.com", "Call": "yes", "Firebase": "no", "Cache": "no",
                    "Actions": #"view, Open portal, https://home.nest.com/, clear=true; http, Turn down, https://api.nest.com/, body='{"temp": 65}'"#,
                ])
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["click"] == "https://home.nest.com/" && json["icon"] == "https://example.com/icon.png")
            #expect(json["attachment"] == ["url": "https://example.com/camera.jpg", "name": "camera.jpg"])
            #expect(json["content_type"] == "text/markdown")
            let answered = try #require(json["actions"]?.arrayValue)
            #expect(answered.count == 2)
            #expect(answered[0] == ["id": "view-1", "action": "view", "label": "Open portal", "url": "https://home.nest.com/", "clear": true])
            #expect(answered[1].objectValue?["method"] == "POST" && answered[1].objectValue?["body"] == #"{"temp": 65}"#)

            let payload = try #require(try await apns.acceptedPayload(id: json["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["body": "**Disk** is _full_"])  // markdown is shown as the text it is
            #expect(payload["url"] == "https://home.nest.com/" && payload["image_url"] == "https://example.com/camera.jpg")
            #expect(payload["icon_url"] == "https://example.com/icon.png")
            #expect(payload.aps["mutable-content"] == 1 && payload.aps["category"] == "HERALD_ACTIONS")
            let actions = (payload["actions"]?.arrayValue ?? []).compactMap { $0.objectValue }
            #expect(actions.count == 2)
            #expect(actions[0]["title"] == "Open portal" && actions[0]["url"] == "https://home.nest.com/" && actions[0]["foreground"] == true)
            #expect(actions[1]["method"] == "POST" && actions[1]["body"] == #"{"temp": 65}"#)
            #expect(actions[1]["headers"] == ["Content-Type": "application/json"])
        }
        try await apns.shutdown()
    }

    @Test func jsonPublishingAtTheRoot() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let topic = try await client.register(token: Fixtures.apnsToken(0x63)).userID
            // docs/publish.md, "Publish as JSON".
            let body = """
                {"topic": "\(topic)", "message": "Disk space is low at 5.1 GB", "title": "Low disk space alert",
                 "tags": ["warning", "cd"], "priority": 4, "attach": "https://filesrv.lan/space.jpg", "filename": "diskspace.jpg",
                 "click": "https://homecamera.lan/xasds1h2xsSsa/",
                 "actions": [{"action": "view", "label": "Admin panel", "url": "https://filesrv.lan/admin"}],
                 "email": "phil@example.com", "markdown": false}
                """
            let response = try await client.post("/", body)
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["topic"] == .string(topic) && json["priority"] == 4 && json["title"] == "Low disk space alert")
            #expect(json["attachment"] == ["url": "https://filesrv.lan/space.jpg", "name": "diskspace.jpg"])
            let payload = try #require(try await apns.acceptedPayload(id: json["id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "⚠️💿 Low disk space alert", "body": "Disk space is low at 5.1 GB"])
            #expect(payload.aps["interruption-level"] == "time-sensitive")
            #expect(payload["actions"]?.arrayValue?.count == 1)

            // PUT / is the same.
            let put = try await client.post("/", #"{"topic": "\#(topic)", "message": "Hi", "priority": "min"}"#, method: .put)
            #expect(put.status == .ok)
            #expect(try put.json()["priority"] == 1)
        }
        try await apns.shutdown()
    }

    /// What `aiontfy` (Home Assistant's ntfy library; Python 3.12+, so not run here) sends and reads: `Message.to_dict()`
    /// with every member, `null` where unset, posted to `/`; the answer read as its `Notification` (id, time, event, topic
    /// required; priority 1–5; actions with `action`, `label`, `url`), errors handed to `raise_http_error(code, http,
    /// error, link)`, which takes no other member.
    @Test func aiontfysPublishAndItsReadingOfTheAnswer() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let topic = try await client.register(token: Fixtures.apnsToken(0x65)).userID
            let body = """
                {"topic": "\(topic)", "message": "Washer finished", "title": "Laundry", "tags": ["tada"], "priority": 4,
                 "actions": [{"action": "http", "label": "Ack", "url": "https://ha.lan/api/ack", "method": "POST", "headers": null,
                              "body": null, "clear": false}],
                 "click": null, "attach": null, "markdown": false, "icon": null, "filename": null, "delay": null, "email": null,
                 "call": null, "sequence_id": "laundry"}
                """
            let response = try await client.post("/", body)
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["id"]?.stringValue != nil && json["time"]?.doubleValue != nil && json["event"] == "message")
            #expect(json["topic"] == .string(topic) && json["priority"] == 4 && json["sequence_id"] == "laundry")
            let action = try #require(json["actions"]?.arrayValue?.first?.objectValue)
            #expect(action["action"] == "http" && action["label"] == "Ack" && action["url"] == "https://ha.lan/api/ack")
            let push = try #require(await apns.acceptedPush(id: json["id"]?.stringValue))
            #expect(push.header("apns-collapse-id") == "laundry")
            let payload = try #require(try JSONValue.decode(push.body).objectValue)
            #expect(payload.aps["alert"] == ["title": "🎉 Laundry", "body": "Washer finished"])
            #expect(payload.aps["interruption-level"] == "time-sensitive")

            let refused = try await client.post("/", #"{"topic": "\#(topic)", "message": "x", "priority": 7}"#)
            #expect(Set(try refused.json().keys) == ["code", "http", "error", "link"])
        }
        try await apns.shutdown()
    }

    @Test func refusalsAreNtfysErrorsNeverA500() async throws {
        let server = try TestServer()
        try await server.run { client in
            let topic = try await client.register().userID
            func expectNtfyError(
                _ response: TestResponse, status: Int, code: Int, mentioning words: String..., sourceLocation: SourceLocation = #_sourceLocation
            ) throws {
                #expect(response.status.code == status, sourceLocation: sourceLocation)
                let json = try response.json()
                #expect(Set(json.keys) == ["code", "http", "error", "link"], sourceLocation: sourceLocation)
                #expect(json["code"] == .int(code) && json["http"] == .int(status), sourceLocation: sourceLocation)
                for word in words { #expect(json["error"]?.stringValue?.contains(word) == true, "\(json)", sourceLocation: sourceLocation) }
            }
            try expectNtfyError(try await client.ntfy("/\(topic)", body: "x", headers: ["Priority": "9"]), status: 400, code: 40007, mentioning: "priority")
            // Delays: NtfyDelayTests.
            try expectNtfyError(
                try await client.post("/", #"{"topic": "\#(topic)", "message": "x", "delay": "tomorrow, 10am"}"#), status: 400, code: 40004,
                mentioning: "Unix timestamp")
            try expectNtfyError(
                try await client.ntfy("/\(topic)", body: "x", headers: ["Actions": "broadcast, Take picture, extras.cmd=pic"]),
                status: 400, code: 40018, mentioning: "broadcast")
            // A file (ntfy's attachment): not UTF-8 text.
            let file = try await client.execute(
                uri: "/\(topic)", method: .put, headers: [HTTPField.Name("Filename")!: "flower.jpg"], body: ByteBuffer(bytes: [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]))
            try expectNtfyError(file, status: 400, code: 40014, mentioning: "does not store files")
            try expectNtfyError(
                try await client.ntfy("/\(String(repeating: "ab", count: 32))", body: "x", method: .put), status: 404, code: 40401)
            try expectNtfyError(try await client.post("/", "not json"), status: 400, code: 40024)
            try expectNtfyError(try await client.post("/", #"{"message": "no topic"}"#), status: 400, code: 40001, mentioning: "topic")
            try expectNtfyError(try await client.post("/", #"{"topic": "mytopic", "message": "x"}"#), status: 400, code: 40001, mentioning: "USER_ID")
            try expectNtfyError(try await client.ntfy("/\(topic)", body: "x", headers: ["Click": "javascript:alert(1)"]), status: 400, code: 40001)
            try expectNtfyError(try await client.execute(uri: "/\(topic)/json", method: .get), status: 404, code: 40401, mentioning: "subscriptions")
        }
    }

    @Test func theDailyLimitAnswers429AsNtfyDoes() async throws {
        let server = try TestServer(dailyLimit: 1)
        try await server.run { client in
            let topic = try await client.register().userID
            #expect(try await client.ntfy("/\(topic)", body: "one").status == .ok)
            let refused = try await client.ntfy("/\(topic)", body: "two")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] != nil && refused.rateLimit?.remaining == 0)
            let json = try refused.json()
            #expect(json["code"] == 42908 && json["http"] == 429)
        }
    }

    @Test func theRootIsSharedWithoutChangingHeraldsRoutes() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            let wrongMethod = try await client.execute(uri: "/healthz", method: .post)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(try wrongMethod.json()["code"] == "method_not_allowed")
            // A path that is no USER_ID and no route stays Herald's 404, in Herald's shape.
            for path in ["/mytopic", "/api/push/unknown", "/somewhere/else/entirely"] {
                let response = try await client.post(path, "{}")
                #expect(response.status == .notFound, "\(path)")
                #expect(try response.json()["code"] == "not_found", "\(path)")
            }
            // GET /<USER_ID> without a body is Bark's 400; another method is a 405 that names the senders' methods.
            let noBody = try await client.execute(uri: "/\(owner.userID)", method: .get)
            #expect(noBody.status == .badRequest)
            #expect(try noBody.json()["message"]?.stringValue?.contains("body") == true)
            for (path, allow) in [("/\(owner.userID)", "GET, POST, PUT"), ("/\(owner.userID)/publish", "GET, POST, PUT"), ("/\(owner.userID)/t/b", "GET, POST")] {
                let response = try await client.execute(uri: path, method: .delete)
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == allow, "\(path)")
                #expect(try response.json()["code"] == "method_not_allowed")
            }
            // More than four segments: not a sender's path.
            #expect(try await client.execute(uri: "/\(owner.userID)/a/b/c/d", method: .get).status == .notFound)
            // Herald's own send APIs still answer as before.
            #expect(try await client.notify(owner.userID).status == .created)
        }
    }

    @Test func theAccessLogNamesTheTemplateNeverTheUSERID() async throws {
        let server = try TestServer()
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .info
        let app = try await buildApplication(server.configuration, clock: server.clock, logger: logger)
        let userID = try await PatientLiveTest.run(app) { client in
            let userID = try await client.register().userID
            #expect(try await client.ntfy("/\(userID)", body: "ntfy").status == .ok)
            #expect(try await client.execute(uri: "/\(userID)/publish?m=x", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/\(userID)/T/B", method: .get).status == .ok)
            return userID
        }
        let routes = log.all.filter { $0.message == "Request" }.compactMap { $0.metadata["route"] }
        #expect(routes.suffix(3) == ["/{topic}", "/{topic}/publish", "/{key}/{title}/{body}"])
        #expect(!log.all.contains { record in record.message.contains(userID) || record.metadata.values.contains { $0.contains(userID) } })
    }

    @Test func barkOrNtfyAtASingleSegment() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let key = try await client.register(token: Fixtures.apnsToken(0x64)).userID
            // A form with body: Bark's.
            var response = try await client.ntfy("/\(key)", body: "title=Hello&body=From+Bark", contentType: "application/x-www-form-urlencoded")
            #expect(try response.json()["message"] == "success")
            #expect(try response.json()["code"] == 200)
            // A JSON object with body: Bark's.
            response = try await client.post("/\(key)", #"{"title": "Hi", "body": "JSON Bark"}"#)
            #expect(try response.json()["message"] == "success")
            // Any other JSON, or text that is not form fields with body: ntfy's message, byte for byte.
            let text = #"{"message": "not Bark"}"#
            response = try await client.post("/\(key)", text)
            #expect(try response.json()["event"] == "message")
            #expect(try response.json()["message"] == .string(text))
            response = try await client.ntfy("/\(key)", body: "a=b&c=d", contentType: "application/x-www-form-urlencoded")
            #expect(try response.json()["message"] == "a=b&c=d")
            _ = await eventually { apns.production.acceptedPushes.count == 4 }
            let bodies = apns.production.acceptedPushes.compactMap { try? JSONValue.decode($0.body).objectValue?.aps["alert"]?.objectValue?["body"] }
            #expect(bodies == ["From Bark", "JSON Bark", .string(text), "a=b&c=d"])
        }
        try await apns.shutdown()
    }
}

extension TestClientProtocol {
    /// A request as ntfy's curl lines send it: the text body (as a form unless said otherwise, as `curl -d` does).
    func ntfy(
        _ uri: String, body: String, headers: [String: String] = [:], contentType: String? = "application/x-www-form-urlencoded",
        method: HTTPRequest.Method = .post
    ) async throws -> TestResponse {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return try await execute(uri: uri, method: method, headers: fields, body: ByteBuffer(string: body))
    }
}

extension JSONObject {
    /// The `aps` dictionary of an APNs payload.
    var aps: JSONObject { self["aps"]?.objectValue ?? [:] }
}
