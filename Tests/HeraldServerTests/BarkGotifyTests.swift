import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Bark's and Gotify's send APIs over real HTTP: each mapping rule checked on what reached the APNs double.
@Suite("Bark and Gotify")
struct BarkGotifyTests {
    @Test func barkPushAsAppriseSendsIt() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let key = try await client.register(token: Fixtures.apnsToken(0x71)).userID
            // What Apprise's bark:// sends (reference/ntfy/README.md).
            let response = try await client.post(
                "/push", #"{"device_key": "\#(key)", "title": "Backup", "body": "Done in 4 min", "icon": "https://example.com/i.png"}"#)
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["code"] == 200 && json["message"] == "success" && json["timestamp"]?.doubleValue != nil)
            _ = await eventually { apns.production.acceptedPushes.count == 1 }
            let first = try #require(apns.production.acceptedPushes.first)
            let payload = try #require(try JSONValue.decode(first.body).objectValue)
            #expect(payload.aps["alert"] == ["title": "Backup", "body": "Done in 4 min"])
            #expect(payload["icon_url"] == "https://example.com/i.png" && payload.aps["interruption-level"] == "active")
        }
        try await apns.shutdown()
    }

    @Test func barkPathFormsAndEveryParameter() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let key = try await client.register(token: Fixtures.apnsToken(0x72)).userID
            let query = "level=timeSensitive&group=backups&url=https%3A%2F%2Fexample.com%2Flog&id=nightly&sound=minuet&badge=3"
                + "&image=https%3A%2F%2Fexample.com%2Fchart.png&copy=x&isArchive=1&volume=5&automaticallyCopy=1"
            var response = try await client.execute(uri: "/\(key)/Nightly%20backup/Finished%20fine?\(query)", method: .get)
            #expect(response.status == .ok)
            #expect(try response.json()["message"] == "success")
            _ = await eventually { apns.production.acceptedPushes.count == 1 }
            var push = try #require(apns.production.acceptedPushes.last)
            var payload = try #require(try JSONValue.decode(push.body).objectValue)
            #expect(payload.aps["alert"] == ["title": "Nightly backup", "body": "Finished fine"])
            #expect(payload.aps["interruption-level"] == "time-sensitive" && payload.aps["thread-id"] == "backups")
            #expect(payload.aps["sound"] == "minuet.caf" && payload["badge"] == 3 && payload["url"] == "https://example.com/log")
            #expect(payload["image_url"] == "https://example.com/chart.png" && payload.aps["mutable-content"] == 1)
            #expect(push.header("apns-collapse-id") == "nightly")

            // /:key/:body, POST with a form; /:key/:title/:subtitle/:body; /:key with ?body=.
            response = try await client.ntfy("/\(key)/Only%20a%20body", body: "level=passive", contentType: "application/x-www-form-urlencoded")
            #expect(response.status == .ok)
            response = try await client.execute(uri: "/\(key)/T/S/B", method: .get)
            #expect(response.status == .ok)
            response = try await client.execute(uri: "/\(key)?title=Q&body=From+query&level=critical", method: .get)
            #expect(response.status == .ok)
            _ = await eventually { apns.production.acceptedPushes.count == 4 }
            let payloads = try apns.production.acceptedPushes.map { try #require(try JSONValue.decode($0.body).objectValue) }
            #expect(payloads[1].aps["alert"] == ["body": "Only a body"] && payloads[1].aps["interruption-level"] == "passive")
            #expect(payloads[2].aps["alert"] == ["title": "T", "subtitle": "S", "body": "B"])
            #expect(payloads[3].aps["interruption-level"] == "critical" && payloads[3].aps["sound"]?.objectValue?["critical"] == 1)
            push = apns.production.acceptedPushes[2]
            #expect(push.header("apns-collapse-id") == nil)
            payload = payloads[3]
            #expect(payload.aps["alert"] == ["title": "Q", "body": "From query"])
        }
        try await apns.shutdown()
    }

    @Test func barkSendsToSeveralKeysAndRefusesInItsShape() async throws {
        let server = try TestServer()
        try await server.run { client in
            let first = try await client.register(token: Fixtures.apnsToken(0x73)).userID
            let second = try await client.register(token: Fixtures.apnsToken(0x74)).userID
            let unknown = String(repeating: "cd", count: 32)
            let response = try await client.post("/push", #"{"device_keys": ["\#(first)", "\#(second)", "\#(unknown)"], "body": "All"}"#)
            #expect(response.status == .ok)
            let data = try #require(try response.json()["data"]?.arrayValue)
            #expect(data.map { $0.objectValue?["code"] } == [200, 200, 404])

            func expectBarkError(_ response: TestResponse, status: Int, mentioning word: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                #expect(response.status.code == status, sourceLocation: sourceLocation)
                let json = try response.json()
                #expect(Set(json.keys) == ["code", "message", "timestamp"], sourceLocation: sourceLocation)
                #expect(json["code"] == .int(status), sourceLocation: sourceLocation)
                #expect(json["message"]?.stringValue?.contains(word) == true, "\(json)", sourceLocation: sourceLocation)
            }
            try expectBarkError(try await client.post("/push", #"{"body": "x"}"#), status: 400, mentioning: "device_key")
            try expectBarkError(try await client.post("/push", #"{"device_key": "\#(first)"}"#), status: 400, mentioning: "body")
            try expectBarkError(try await client.post("/push", #"{"device_key": "\#(first)", "body": "x", "level": "loud"}"#), status: 400, mentioning: "level")
            try expectBarkError(try await client.post("/push", #"{"device_key": "\#(first)", "body": "x", "badge": -1}"#), status: 400, mentioning: "badge")
            try expectBarkError(try await client.post("/push", #"{"device_key": "nope", "body": "x"}"#), status: 400, mentioning: "USER_ID")
            try expectBarkError(try await client.post("/push", #"{"device_key": "\#(unknown)", "body": "x"}"#), status: 404, mentioning: "USER_ID")
            try expectBarkError(try await client.execute(uri: "/\(first)/t/b?url=javascript:alert(1)", method: .get), status: 400, mentioning: "url")
            try expectBarkError(try await client.post("/push", "[1]"), status: 400, mentioning: "JSON")
        }
    }

    @Test func gotifyMessageAsAppriseSendsItWithEachTokenForm() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x75))
            let token = try await client.createToken(for: owner, name: "gotify").token
            // Apprise's gotify://: X-Gotify-Key and {"priority": 5, "title", "message"}.
            var response = try await client.post("/message", #"{"priority": 5, "title": "Sonarr", "message": "Episode grabbed"}"#, headers: [HTTPField.Name("X-Gotify-Key")!: token])
            #expect(response.status == .ok)
            var json = try response.json()
            #expect(json["message"] == "Episode grabbed" && json["title"] == "Sonarr" && json["priority"] == 5 && json["appid"] == 1)
            #expect(json["id"]?.doubleValue != nil && json["herald_id"]?.stringValue != nil && json["date"]?.stringValue != nil)
            var payload = try #require(try await apns.acceptedPayload(id: json["herald_id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "Sonarr", "body": "Episode grabbed"] && payload.aps["interruption-level"] == "active")

            // ?token=, extras with the click URL and the big image, priority 9: time-sensitive.
            let extras = #"{"client::notification": {"click": {"url": "https://sonarr.lan/"}, "bigImageUrl": "https://sonarr.lan/poster.jpg"}}"#
            response = try await client.post("/message?token=\(token)", #"{"message": "Alarm", "priority": 9, "extras": \#(extras)}"#)
            json = try response.json()
            #expect(json["extras"]?.objectValue?["client::notification"] != nil)
            payload = try #require(try await apns.acceptedPayload(id: json["herald_id"]?.stringValue))
            #expect(payload.aps["interruption-level"] == "time-sensitive" && payload["url"] == "https://sonarr.lan/")
            #expect(payload["image_url"] == "https://sonarr.lan/poster.jpg" && payload.aps["mutable-content"] == 1)

            // Bearer, a urlencoded form, priority 2: passive.
            response = try await client.ntfy(
                "/message", body: "message=Quiet&title=Low&priority=2", headers: ["Authorization": "Bearer \(token)"])
            payload = try #require(try await apns.acceptedPayload(id: try response.json()["herald_id"]?.stringValue))
            #expect(payload.aps["alert"] == ["title": "Low", "body": "Quiet"] && payload.aps["interruption-level"] == "passive")

            // A multipart form.
            let multipart = "--XyZ\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nFrom multipart\r\n--XyZ\r\n"
                + "Content-Disposition: form-data; name=\"priority\"\r\n\r\n8\r\n--XyZ--\r\n"
            response = try await client.ntfy(
                "/message", body: multipart, headers: ["X-Gotify-Key": token], contentType: "multipart/form-data; boundary=XyZ")
            payload = try #require(try await apns.acceptedPayload(id: try response.json()["herald_id"]?.stringValue))
            #expect(payload.aps["alert"] == ["body": "From multipart"] && payload.aps["interruption-level"] == "time-sensitive")
        }
        try await apns.shutdown()
    }

    @Test func gotifyRefusalsInGotifysShape() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner, name: "gotify").token
            func expectGotifyError(_ response: TestResponse, status: Int, mentioning word: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                #expect(response.status.code == status, sourceLocation: sourceLocation)
                let json = try response.json()
                #expect(Set(json.keys) == ["error", "errorCode", "errorDescription"], sourceLocation: sourceLocation)
                #expect(json["errorCode"] == .int(status), sourceLocation: sourceLocation)
                #expect(json["errorDescription"]?.stringValue?.contains(word) == true, "\(json)", sourceLocation: sourceLocation)
            }
            let key: HTTPFields = [HTTPField.Name("X-Gotify-Key")!: token]
            try expectGotifyError(try await client.post("/message", #"{"message": "x", "priority": 11}"#, headers: key), status: 400, mentioning: "priority")
            try expectGotifyError(try await client.post("/message", #"{"message": "x", "priority": 1e300}"#, headers: key), status: 400, mentioning: "priority")
            try expectGotifyError(try await client.post("/message", #"{"title": "no message"}"#, headers: key), status: 400, mentioning: "message")
            try expectGotifyError(try await client.post("/message", #"{"message": "x"}"#), status: 401, mentioning: "X-Gotify-Key")
            try expectGotifyError(
                try await client.post("/message", #"{"message": "x"}"#, headers: [HTTPField.Name("X-Gotify-Key")!: "hrd_" + String(repeating: "0", count: 64)]),
                status: 401, mentioning: "not valid")
            try expectGotifyError(try await client.post("/message", "[]", headers: key), status: 400, mentioning: "JSON")
        }
    }
}
