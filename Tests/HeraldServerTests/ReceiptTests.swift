import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 39, section 3: notifications that repeat until acknowledged, over real HTTP against the APNs double, on a
/// test clock: the repeats' collapse id, acknowledging, expiry, the 50-repeat cap, replacement and cancellation.
@Suite("Receipts")
struct ReceiptTests {
    static func server(dailyLimit: Int = 150) async throws -> APNsTestServer {
        var apns = try await APNsTestServer.start(dailyLimit: dailyLimit, clock: TestClock(Date(timeIntervalSince1970: 1_780_000_000)))
        apns.server.configuration.receiptPollInterval = .milliseconds(20)
        return apns
    }

    @Test func repeatsReachAPNsUnderOneCollapseIDUntilARepeatIsAcknowledged() async throws {
        let apns = try await Self.server()
        let clock = apns.server.clock
        try await apns.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let created = try await client.sendAction(
                token.bearer,
                body: #"{"title": "Water leak", "body": "Basement", "collapse_id": "leak", "acknowledge": {"repeat_seconds": 30, "expire_seconds": 600}}"#)
            #expect(created.status == .created)
            let json = try created.json()
            let receiptID = try #require(json["receipt"]?.stringValue)
            let notificationID = try #require(json["id"]?.stringValue)
            #expect(json["answerable"] == true && json["collapse_id"] == "leak")
            // No answer action given: Herald adds its own.
            #expect(
                json["actions"] == [
                    ["id": "pw_ack", "title": "Acknowledge", "method": "GET", "foreground": false, "destructive": false, "authentication_required": false]
                ])
            #expect(await eventually { apns.pushes(collapseID: "leak").count == 1 })
            let first = try await client.receipt(receiptID, token)
            #expect(first.status == .ok)
            let body = try first.json()
            #expect(body["status"] == "active" && body["repeats_sent"] == .int(0) && body["notification_id"] == .string(notificationID))
            #expect(body["action_id"] == .null && body["acknowledged_by_device"] == .null && body["cancel_reason"] == .null && body["ended_at"] == .null)

            for count in 1...2 {
                clock.advance(by: 30)
                #expect(await eventually { apns.pushes(collapseID: "leak").count == count + 1 })
                #expect(try await eventually { try await client.receipt(receiptID, token).json()["repeats_sent"] == .int(count) })
            }
            // Every push carries the same collapse id and the Acknowledge action; each repeat is a notification of its own.
            let pushes = apns.pushes(collapseID: "leak")
            #expect(Set(pushes.compactMap { $0.header("apns-id") }).count == 3)
            let latest = try #require(pushes.last?.header("apns-id"))
            let last = try #require(pushes.last)
            let payload = try #require(try JSONValue.decode(last.body).objectValue)
            #expect(payload["actions"]?.arrayValue?.first?.objectValue?["id"] == "pw_ack")

            // The app answers the repeat it shows.
            let answered = try await client.post("/api/push/notifications/\(latest)/answer", #"{"action_id": "pw_ack"}"#, headers: owner.basic)
            #expect(answered.status == .noContent)
            let ended = try await client.receipt(receiptID, token).json()
            #expect(ended["status"] == "acknowledged" && ended["action_id"] == "pw_ack" && ended["repeats_sent"] == .int(2))
            #expect(ended["acknowledged_by_device"]?.stringValue != nil && ended["ended_at"]?.stringValue?.hasSuffix("Z") == true)
            // The answer is the first notification's answer.
            let answer = try await client.execute(uri: "/notifications/answers/\(notificationID)", method: .get, headers: token.bearer).json()
            #expect(answer["status"] == "answered" && answer["action_id"] == "pw_ack")
            // No repeat after the acknowledgement.
            clock.advance(by: 90)
            try await Task.sleep(for: .milliseconds(300))
            #expect(apns.pushes(collapseID: "leak").count == 3)
            // The app's inbox shows the notification once, not each repeat.
            let inbox = try await client.execute(uri: "/api/push/inbox", method: .get, headers: owner.basic).json()
            #expect(inbox["items"]?.arrayValue?.count == 1)
        }
        try await apns.shutdown()
    }

    @Test func withoutACollapseIDOneIsDerivedAndALongPollLearnsTheExpiry() async throws {
        let apns = try await Self.server()
        let clock = apns.server.clock
        try await apns.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let created = try await client.sendAction(
                token.bearer,
                body: #"{"title": "Door", "body": "Open", "actions": [{"id": "seen", "title": "Seen"}], "acknowledge": {"repeat_seconds": 30, "expire_seconds": 60}}"#)
            let json = try created.json()
            let receiptID = try #require(json["receipt"]?.stringValue)
            let collapseID = try #require(json["collapse_id"]?.stringValue)
            #expect(collapseID == "pw-ack-\(receiptID)")
            // The sender's answer action acknowledges: no action is added.
            #expect(json["actions"]?.arrayValue?.count == 1)
            #expect(await eventually { apns.pushes(collapseID: collapseID).count == 1 })
            // A poll without wait answers at once; with a wait it is held until the receipt ends.
            #expect(try await client.receipt(receiptID, token, wait: "0").json()["status"] == "active")
            clock.advance(by: 30)
            #expect(await eventually { apns.pushes(collapseID: collapseID).count == 2 })
            #expect(try await eventually { try await client.receipt(receiptID, token).json()["repeats_sent"] == .int(1) })
            // The test client has one connection: nothing else is asked while the poll is held.
            async let held = client.receipt(receiptID, token, wait: "25")
            clock.advance(by: 30)
            let expired = try await held.json()
            #expect(expired["status"] == "expired" && expired["repeats_sent"] == .int(1) && expired["action_id"] == .null)
            #expect(expired["ended_at"]?.stringValue != nil)
            // An answer after the expiry is still the notification's answer; the receipt stays expired.
            let id = try #require(json["id"]?.stringValue)
            #expect(try await client.post("/api/push/notifications/\(id)/answer", #"{"action_id": "seen"}"#, headers: owner.basic).status == .noContent)
            #expect(try await client.receipt(receiptID, token).json()["status"] == "expired")
            #expect(apns.pushes(collapseID: collapseID).count == 2)
        }
        try await apns.shutdown()
    }

    @Test func atMostFiftyRepeatsNotCountedAgainstTheDailyLimit() async throws {
        let apns = try await Self.server(dailyLimit: 2)
        let clock = apns.server.clock
        try await apns.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let created = try await client.sendAction(
                token.bearer, body: #"{"title": "Alarm", "body": "Smoke", "collapse_id": "smoke", "acknowledge": {"repeat_seconds": 30, "expire_seconds": 10800}}"#)
            let receiptID = try #require(try created.json()["receipt"]?.stringValue)
            for count in 1...ReceiptRules.maximumRepeats {
                clock.advance(by: 30)
                #expect(try await eventually { try await client.receipt(receiptID, token).json()["repeats_sent"] == .int(count) }, "repeat \(count)")
            }
            #expect(await eventually { apns.pushes(collapseID: "smoke").count == 51 })
            clock.advance(by: 300)
            try await Task.sleep(for: .milliseconds(300))
            #expect(apns.pushes(collapseID: "smoke").count == 51)
            let capped = try await client.receipt(receiptID, token).json()
            #expect(capped["status"] == "active" && capped["repeats_sent"] == .int(50) && capped["next_repeat_at"] == .null)
            // Fifty-one pushes, one counted: the daily limit of 2 still takes one more.
            let plain = try await client.sendAction(token.bearer)
            #expect(plain.status == .created)
            #expect(plain.rateLimit?.remaining == 0)
            // Still acknowledgeable until it expires, then expired.
            clock.advance(by: 10_800)
            #expect(try await eventually { try await client.receipt(receiptID, token).json()["status"] == "expired" })
        }
        try await apns.shutdown()
    }

    @Test func aNewerSendWithTheSameCollapseIDReplacesAndCancelsStopRepeatsByIdAndByTag() async throws {
        let apns = try await Self.server()
        let clock = apns.server.clock
        try await apns.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let other = try await client.createToken(for: try await client.register())
            func send(_ collapse: String, tags: String = "[]") async throws -> String {
                let created = try await client.sendAction(
                    token.bearer, body: #"{"title": "T", "body": "B", "collapse_id": "\#(collapse)", "tags": \#(tags), "acknowledge": {}}"#)
                #expect(created.status == .created)
                return try #require(try created.json()["receipt"]?.stringValue)
            }
            let older = try await send("door")
            let newer = try await send("door")
            let replaced = try await client.receipt(older, token).json()
            #expect(replaced["status"] == "replaced" && replaced["ended_at"]?.stringValue != nil)
            #expect(try await client.receipt(newer, token).json()["status"] == "active")
            #expect(try await client.receipt(newer, token, wait: "1").json()["status"] == "active")

            // Another token sees and cancels nothing of this one's.
            #expect(try await client.receipt(newer, other).status == .notFound)
            #expect(try await client.post("/notifications/receipts/\(newer)/cancel", "", headers: other.bearer).status == .notFound)
            #expect(try await client.receipt(UUID().uuidString, token).status == .notFound)
            #expect(try await client.receipt("not-an-id", token).status == .notFound)

            let canceled = try await client.post("/notifications/receipts/\(newer)/cancel", "", headers: token.bearer)
            #expect(canceled.status == .ok)
            let canceledJSON = try canceled.json()
            #expect(canceledJSON["status"] == "canceled" && canceledJSON["cancel_reason"] == "canceled_by_sender")
            #expect(try await client.post("/notifications/receipts/\(newer)/cancel", "", headers: token.bearer).json()["status"] == "canceled")

            let garage = try await send("garage-1", tags: #"["garage"]"#)
            let garageToo = try await send("garage-2", tags: #"["garage", "north"]"#)
            let kept = try await send("cellar", tags: #"["cellar"]"#)
            #expect(try await client.post("/notifications/receipts/cancel", #"{"tag": "garage"}"#, headers: other.bearer).json()["canceled"] == .int(0))
            let byTag = try await client.post("/notifications/receipts/cancel", #"{"tag": "garage"}"#, headers: token.bearer)
            #expect(byTag.status == .ok)
            #expect(try byTag.json()["canceled"] == .int(2))
            for id in [garage, garageToo] {
                let ended = try await client.receipt(id, token).json()
                #expect(ended["status"] == "canceled" && ended["cancel_reason"] == "canceled_by_tag")
            }
            #expect(try await client.receipt(kept, token).json()["status"] == "active")
            for (body, field) in [(#"{"tag": ""}"#, "tag"), (#"{}"#, "tag"), (#"{"tag": "a", "all": true}"#, "all")] {
                let refused = try await client.post("/notifications/receipts/cancel", body, headers: token.bearer)
                #expect(refused.status == .badRequest, "\(body)")
                #expect(try refused.json()["field"] == .string(field), "\(body)")
            }

            // Only the one left active repeats.
            clock.advance(by: 60)
            #expect(await eventually { apns.pushes(collapseID: "cellar").count == 2 })
            try await Task.sleep(for: .milliseconds(300))
            #expect(apns.pushes(collapseID: "door").count == 2)
            #expect(apns.pushes(collapseID: "garage-1").count == 1 && apns.pushes(collapseID: "garage-2").count == 1)
        }
        try await apns.shutdown()
    }

    @Test func aDeviceWhoseTokenDiedEndsItsReceiptsAsCanceled() async throws {
        let apns = try await Self.server()
        let clock = apns.server.clock
        try await apns.server.run { client in
            let token = Fixtures.apnsToken(0x41)
            let sender = try await client.createToken(for: try await client.register(token: token))
            let created = try await client.sendAction(
                sender.bearer, body: #"{"title": "T", "body": "B", "collapse_id": "dead", "acknowledge": {"repeat_seconds": 30}}"#)
            let receiptID = try #require(try created.json()["receipt"]?.stringValue)
            #expect(await eventually { apns.pushes(collapseID: "dead").count == 1 })
            // APNs says the token is gone at the next repeat; the one after finds the device inactive.
            apns.production.markUnregistered(token)
            var canceled = false
            for _ in 0..<10 where !canceled {
                clock.advance(by: 30)
                canceled = try await eventually(attempts: 40) {
                    try await client.receipt(receiptID, sender).json()["status"] == "canceled"
                }
            }
            #expect(canceled)
            #expect(try await client.receipt(receiptID, sender).json()["cancel_reason"] == "device_inactive")
        }
        try await apns.shutdown()
    }
}

extension APNsTestServer {
    /// The pushes the production double accepted with this `apns-collapse-id`, in order.
    func pushes(collapseID: String) -> [APNsDouble.RecordedRequest] {
        production.acceptedPushes.filter { $0.header("apns-collapse-id") == collapseID }
    }
}

extension TestClientProtocol {
    func receipt(_ id: String, _ token: CreatedToken, wait: String? = nil) async throws -> TestResponse {
        try await execute(uri: "/notifications/receipts/\(id)" + (wait.map { "?wait=\($0)" } ?? ""), method: .get, headers: token.bearer)
    }
}
