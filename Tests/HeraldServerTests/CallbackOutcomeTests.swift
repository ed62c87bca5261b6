import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Subprocess
import SystemPackage
import Testing

/// Issue 39, section 4: a token's outcome callbacks (`PUT /notifications/callback`), and the callbacks checked by an
/// implementation Herald did not write.
@Suite("Token outcome callbacks")
struct CallbackOutcomeTests {
    @Test func aTokenSetsShowsAndClearsItsOutcomeCallbackURL() async throws {
        let setup = try await CallbackTestServer.start()
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            var response = try await client.execute(uri: "/notifications/callback", method: .get, headers: token.bearer)
            #expect(response.status == .ok)
            #expect(try response.json()["callback_url"] == .null)
            for (body, field) in [
                (#"{}"#, "url"), (#"{"url": "http://example.com"}"#, "url"), (#"{"url": 3}"#, "url"), (#"{"url": "https://x.example", "y": 1}"#, "y"),
            ] {
                response = try await client.post("/notifications/callback", body, headers: token.bearer, method: .put)
                #expect(response.status == .badRequest, "\(body)")
                #expect(try response.json()["field"] == .string(field), "\(body)")
            }
            response = try await client.post("/notifications/callback", #"{"url": "\#(setup.receiver.url())"}"#, headers: token.bearer, method: .put)
            #expect(response.status == .ok)
            #expect(try response.json()["callback_url"] == .string(setup.receiver.url()))
            response = try await client.execute(uri: "/notifications/callback", method: .get, headers: token.bearer)
            #expect(try response.json()["callback_url"] == .string(setup.receiver.url()))
            response = try await client.execute(uri: "/notifications/callback", method: .delete, headers: token.bearer)
            #expect(response.status == .noContent)
            response = try await client.execute(uri: "/notifications/callback", method: .get, headers: token.bearer)
            #expect(try response.json()["callback_url"] == .null)
            // Without a token: 401.
            response = try await client.execute(uri: "/notifications/callback", method: .get)
            #expect(response.status == .unauthorized)
        }
        try await setup.shutdown()
    }

    @Test func aDeliveredNotificationOfATokenWithAnOutcomeURLGetsASignedDeliveredCallback() async throws {
        let apns = try await APNsTestServer.start()
        let setup = try await CallbackTestServer.start(base: apns.server)
        try await setup.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x52))
            let token = try await client.createToken(for: owner)
            let silent = try await client.createToken(for: owner, name: "no callback")
            setup.receiver.secret = CallbackSigning.displayed(CallbackSigning.secret(tokenText: token.token))
            let set = try await client.post("/notifications/callback", #"{"url": "\#(setup.receiver.url())"}"#, headers: token.bearer, method: .put)
            #expect(set.status == .ok)
            let response = try await client.post("/notifications", #"{"title": "Door", "body": "Opened"}"#, headers: token.bearer)
            #expect(response.status == .created)
            #expect(try response.json()["status"] == "delivered")
            let id = try #require(try response.json()["id"]?.stringValue)
            #expect(await setup.eventuallyReceived(1))
            let callback = try #require(setup.receiver.received.first)
            #expect(callback.signatureValid)
            #expect(callback.json["type"] == "notification.delivered")
            #expect(callback.json["data"]?.objectValue?["id"] == .string(id))
            #expect(callback.json["data"]?.objectValue?["status"] == "delivered")
            // Another token's notification: nothing.
            let other = try await client.post("/notifications", #"{"title": "Door", "body": "Closed"}"#, headers: silent.bearer)
            #expect(other.status == .created)
            try await Task.sleep(for: .milliseconds(300))
            #expect(setup.receiver.received.count == 1)
        }
        try await setup.shutdown()
    }

    @Test func anAnsweredNotificationOfATokenWithAnOutcomeURLGetsAnAnsweredCallback() async throws {
        let setup = try await CallbackTestServer.start()
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            setup.receiver.secret = CallbackSigning.displayed(CallbackSigning.secret(tokenText: token.token))
            let set = try await client.post("/notifications/callback", #"{"url": "\#(setup.receiver.url())"}"#, headers: token.bearer, method: .put)
            #expect(set.status == .ok)
            let body = #"{"title": "Leak", "body": "Basement", "actions": [{"id": "ack", "title": "On my way", "text_input": true}]}"#
            let sent = try await client.post("/notifications", body, headers: token.bearer)
            #expect(sent.status == .created)
            let id = try #require(try sent.json()["id"]?.stringValue)
            let answer = try await client.post(
                "/api/push/notifications/\(id)/answer", #"{"action_id": "ack", "text": "10 min"}"#, headers: owner.basic)
            #expect(answer.status == .noContent)
            #expect(await setup.eventuallyReceived(1))
            let callback = try #require(setup.receiver.received.first { $0.json["type"] == "notification.answered" })
            #expect(callback.signatureValid)
            let data = try #require(callback.json["data"]?.objectValue)
            #expect(data["id"] == .string(id) && data["status"] == "answered" && data["action_id"] == "ack" && data["text"] == "10 min")
            // A second answer is refused (409) and calls nothing back.
            let again = try await client.post("/api/push/notifications/\(id)/answer", #"{"action_id": "ack"}"#, headers: owner.basic)
            #expect(again.status == .conflict)
            try await Task.sleep(for: .milliseconds(300))
            #expect(setup.receiver.received.filter { $0.json["type"] == "notification.answered" }.count == 1)
        }
        try await setup.shutdown()
    }

    /// PyPI's `standardwebhooks` verifies a callback Herald sent (scripts/webhook-verify.py). `HERALD_WEBHOOK_VERIFIER_PYTHON`
    /// names a Python with it installed (`.ci/run` makes one); without it the test says loudly that it did not run, and
    /// `HERALD_REQUIRE_WEBHOOK_VERIFIER=1` (CI) makes that a failure.
    @Test func standardWebhooksVerifiesWhatHeraldSends() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let python = environment["HERALD_WEBHOOK_VERIFIER_PYTHON"], !python.isEmpty else {
            if environment["HERALD_REQUIRE_WEBHOOK_VERIFIER"] == "1" {
                Issue.record("HERALD_WEBHOOK_VERIFIER_PYTHON is not set and HERALD_REQUIRE_WEBHOOK_VERIFIER=1")
            } else {
                print("⚠️  Standard Webhooks interoperability check DID NOT RUN: set HERALD_WEBHOOK_VERIFIER_PYTHON (see .ci/run)")
            }
            return
        }
        // The real clock: the verifier refuses a timestamp more than 5 minutes away.
        let setup = try await CallbackTestServer.start(clock: TestClock(Date()))
        let (received, secret) = try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            try await setup.enqueue(.expired, to: setup.receiver.url(), token: token, owner: owner, data: ["id": "r2", "status": "expired"])
            #expect(await setup.eventuallyReceived(1))
            return (try #require(setup.receiver.received.first), CallbackSigning.displayed(CallbackSigning.secret(tokenText: token.token)))
        }
        try await setup.shutdown()
        let request: JSONValue = [
            "secret": .string(secret), "body": .string(received.body.base64EncodedString()),
            "headers": .object(received.headers.filter { $0.key.hasPrefix("webhook-") }.mapValues(JSONValue.string)),
        ]
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/webhook-verify.py").path
        let result = try await Subprocess.run(
            .path(FilePath(python)), arguments: [script], input: .string(String(decoding: try request.encoded(), as: UTF8.self)),
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        #expect(result.terminationStatus.isSuccess, "\(result.standardError)")
        let answer = try #require(JSONValue.decode(Data(result.standardOutput.utf8)).objectValue)
        #expect(answer["valid"] == true, "\(answer["error"] ?? .null)")
        #expect(answer["tampered_rejected"] == true)
        #expect(answer["payload"]?.objectValue?["type"] == "notification.expired")
        #expect(answer["payload"]?.objectValue?["data"] == ["id": "r2", "status": "expired"])
    }
}
