import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldActivities
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing

/// Issue 39, section 2: PushWard's tenth template, `approval`, over real HTTP against the APNs double. The app reports
/// the tap with the device's credentials, the sender reads the answer (long-polling), the server ends the card
/// shortly after the tap, and a deadline takes `on_expire`, all driven from the store with a `TestClock`.
@Suite("Approval cards over HTTP")
struct ApprovalCardTests {
    static let updateToken = String(repeating: "ab12", count: 16)
    static let options = #"[{"id": "approve", "title": "Approve"}, {"id": "deny", "title": "Deny"}]"#

    /// Starts the approval card `slug` (`extra` added to its content) and reports its update token once the start went out.
    private func start(
        _ client: some TestClientProtocol, _ apns: APNsTestServer, _ slug: String = "deploy", extra: String = "", as device: ActivityDevice
    ) async throws {
        let before = PushWardActivityTests.activityPushes(apns).count
        let content = #"{"template": "approval", "state": "Deploy to production?", "source": "ci", "options": \#(Self.options)\#(extra)}"#
        let started = try await client.activity(.patch, "/activities/\(slug)?upsert=true", #"{"state": "ongoing", "content": \#(content)}"#, as: device)
        #expect(started.status == .created)
        #expect(started.jsonObject?["answer"] == .null)
        #expect(await eventually(attempts: 1_200) { PushWardActivityTests.activityPushes(apns).count == before + 1 })
        #expect(try await client.reportUpdateToken(Self.updateToken, slug: slug, as: device).status == .noContent)
    }

    private func answer(
        _ client: some TestClientProtocol, _ slug: String, _ body: String, as owner: Registration
    ) async throws -> TestResponse {
        try await client.post("/api/push/activities/\(slug)/answer", body, headers: owner.basic)
    }

    /// `GET /activities/{slug}?wait=N` on a connection of its own (the test client's one connection would hold the tap
    /// behind the held read).
    private func poll(
        _ client: some TestClientProtocol, _ slug: String, wait: Int, as device: ActivityDevice
    ) async throws -> ClusterAnswer {
        let url = "http://127.0.0.1:\(try #require(client.port))/activities/\(slug)?wait=\(wait)"
        // The wait, and as long again as a loaded machine may take to answer after it.
        return try await clusterRequest(
            .GET, url, headers: [("Authorization", try #require(device.bearer[.authorization]))], timeout: .seconds(Int64(wait) + 120))
    }

    @Test func theTapIsRecordedOnceAndTheCardEndsFiveSecondsLaterShowingIt() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            try await start(client, apns, as: device)
            let startPush = try #require(PushWardActivityTests.activityPushes(apns).first)
            let startState = try #require(startPush.aps?["content-state"]?.objectValue)
            #expect(startState["template"] == "approval" && startState["state"] == "Deploy to production?" && startState["source"] == "ci")
            #expect(startState["options"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } == ["approve", "deny"])
            #expect(startState["answer"] == nil)

            let tappedAt = apns.server.clock.now()
            #expect(try await answer(client, "deploy", #"{"option": "approve"}"#, as: device.owner).status == .noContent)
            let read = try #require(try await client.activity(.get, "/activities/deploy", as: device).jsonObject)
            #expect(read["state"] == "ongoing")
            let recorded = try #require(read["answer"]?.objectValue)
            #expect(recorded["option"] == "approve" && recorded["by"] == "user")
            #expect(recorded["answered_at"]?.stringValue == ActivityJSON.rfc3339(tappedAt))

            // The first answer wins: a later one is 409 with the first.
            let later = try await answer(client, "deploy", #"{"option": "deny"}"#, as: device.owner)
            #expect(later.status == .conflict)
            #expect(try later.json()["code"] == "already_answered")
            #expect(try later.json()["answer"]?.objectValue?["option"] == "approve")

            // Nothing is pushed for the tap; the end goes out 5 s after it, showing the answer.
            apns.server.clock.advance(by: 4)
            try await Task.sleep(for: .seconds(1))
            #expect(PushWardActivityTests.activityPushes(apns).count == 1)
            apns.server.clock.advance(by: 2)
            #expect(await eventually(attempts: 1_200) { PushWardActivityTests.activityPushes(apns).count == 2 })
            let end = try #require(PushWardActivityTests.activityPushes(apns).last)
            #expect(end.aps?["event"] == "end")
            #expect(end.deviceToken == Self.updateToken)
            #expect(end.header("apns-priority") == "10")
            let answerState = try #require(end.aps?["content-state"]?.objectValue?["answer"]?.objectValue)
            #expect(answerState["option"] == "approve" && answerState["by"] == "user")
            #expect(answerState["answered_at"]?.doubleValue == tappedAt.timeIntervalSince1970.rounded(.down))
            let ended = try #require(try await client.activity(.get, "/activities/deploy", as: device).jsonObject)
            #expect(ended["state"] == "ended")
            #expect(ended["answer"]?.objectValue?["option"] == "approve")
        }
        try await apns.shutdown()
    }

    @Test func refusedAnswers() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            try await start(client, apns, as: device)
            let cases: [(String, HTTPResponse.Status, String, String)] = [
                (#"{"option": "maybe"}"#, .badRequest, "invalid_field", "option"),
                (#"{"option": ""}"#, .badRequest, "invalid_field", "option"),
                (#"{"option": 1}"#, .badRequest, "invalid_field", "option"),
                (#"{}"#, .badRequest, "invalid_field", "option"),
                (#"{"option": "approve", "by": "user"}"#, .badRequest, "unknown_field", "by"),
            ]
            for (body, status, code, field) in cases {
                let response = try await answer(client, "deploy", body, as: device.owner)
                #expect(response.status == status, "\(body)")
                #expect(try response.json()["code"] == .string(code), "\(body)")
                #expect(try response.json()["field"] == .string(field), "\(body)")
            }
            #expect(try await answer(client, "nothing-here", #"{"option": "approve"}"#, as: device.owner).status == .notFound)
            #expect(try await answer(client, "-bad", #"{"option": "approve"}"#, as: device.owner).status == .badRequest)
            let anonymous = try await client.post("/api/push/activities/deploy/answer", #"{"option": "approve"}"#)
            #expect(anonymous.status == .unauthorized)
            let wrong = Registration(userID: device.owner.userID, secret: String(repeating: "0", count: 64))
            let wrongSecret = try await answer(client, "deploy", #"{"option": "approve"}"#, as: wrong)
            #expect(wrongSecret.status == .forbidden)
            #expect(try wrongSecret.json()["code"] == "wrong_device_secret")

            // Not an approval card, or one that ended unanswered: 409 activity_not_answerable.
            #expect(try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device).status == .created)
            let generic = try await answer(client, "oven", #"{"option": "approve"}"#, as: device.owner)
            #expect(generic.status == .conflict)
            #expect(try generic.json()["code"] == "activity_not_answerable")
            try await start(client, apns, "rollback", as: device)
            #expect(try await client.activity(.patch, "/activities/rollback", #"{"state": "ended"}"#, as: device).status == .ok)
            let ended = try await answer(client, "rollback", #"{"option": "deny"}"#, as: device.owner)
            #expect(ended.status == .conflict)
            #expect(try ended.json()["code"] == "activity_not_answerable")
            #expect(try await client.activity(.get, "/activities/deploy", as: device).jsonObject?["answer"] == .null)
        }
        try await apns.shutdown()
    }

    @Test func aLongPollIsHeldAndWokenByTheTap() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            try await start(client, apns, as: device)
            // Unanswered, a wait is held to its end and answers the card as it is.
            let held = try await client.activity(.get, "/activities/deploy?wait=1", as: device)
            #expect(held.status == .ok)
            #expect(held.jsonObject?["answer"] == .null)
            async let polled = poll(client, "deploy", wait: 25, as: device)
            try await Task.sleep(for: .milliseconds(500))  // most likely parked by then (if not, it reads the answer at once)
            #expect(try await answer(client, "deploy", #"{"option": "deny"}"#, as: device.owner).status == .noContent)
            let woken = try await polled
            #expect(woken.status == 200)
            #expect(woken.json["answer"]?.objectValue?["option"] == "deny")
            #expect(woken.json["answer"]?.objectValue?["by"] == "user")
        }
        try await apns.shutdown()
    }

    @Test func waitIsCheckedAndClamped() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            try await start(client, apns, as: device)
            for wait in ["-1", "abc", "1.5"] {
                let response = try await client.activity(.get, "/activities/deploy?wait=\(wait)", as: device)
                #expect(response.status == .badRequest, "\(wait)")
                #expect(try response.problem()["code"] == "request.query_invalid", "\(wait)")
            }
            #expect(try await answer(client, "deploy", #"{"option": "approve"}"#, as: device.owner).status == .noContent)
            // Answered: any wait, however long, answers at once (a wait past 25 s is 25 s, not refused).
            for wait in ["0", "25", "26", "3600", "99999999999999999999999"] {
                let response = try await client.activity(.get, "/activities/deploy?wait=\(wait)", as: device)
                #expect(response.status == .ok, "\(wait)")
                #expect(response.jsonObject?["answer"]?.objectValue?["option"] == "approve", "\(wait)")
            }
            // Not an approval card: nothing to wait for, answered at once.
            #expect(try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device).status == .created)
            let plain = try await client.activity(.get, "/activities/oven?wait=25", as: device)
            #expect(plain.status == .ok)
            #expect(plain.jsonObject?["answer"] == nil)
        }
        try await apns.shutdown()
    }

    @Test func anUnansweredCardTakesOnExpireAtItsDeadlineAndEnds() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let deadline = Int(apns.server.clock.now().timeIntervalSince1970) + 60
            try await start(client, apns, extra: #", "end_date": \#(deadline), "on_expire": "deny""#, as: device)
            async let polled = poll(client, "deploy", wait: 25, as: device)
            apns.server.clock.advance(by: 59)
            try await Task.sleep(for: .seconds(1))
            #expect(PushWardActivityTests.activityPushes(apns).count == 1)
            apns.server.clock.advance(by: 2)
            #expect(await eventually(attempts: 1_200) { PushWardActivityTests.activityPushes(apns).count == 2 })
            let end = try #require(PushWardActivityTests.activityPushes(apns).last)
            #expect(end.aps?["event"] == "end")
            let answerState = try #require(end.aps?["content-state"]?.objectValue?["answer"]?.objectValue)
            #expect(answerState["option"] == "deny" && answerState["by"] == "expired")
            // The poll held across the deadline was woken by the expiry.
            let woken = try await polled
            #expect(woken.status == 200)
            #expect(woken.json["answer"]?.objectValue?["by"] == "expired")
            let read = try #require(try await client.activity(.get, "/activities/deploy", as: device).jsonObject)
            #expect(read["state"] == "ended")
            #expect(read["answer"]?.objectValue?["option"] == "deny" && read["answer"]?.objectValue?["by"] == "expired")
            // A tap that arrives after the deadline finds the default taken.
            let late = try await answer(client, "deploy", #"{"option": "approve"}"#, as: device.owner)
            #expect(late.status == .conflict)
            #expect(try late.json()["answer"]?.objectValue?["by"] == "expired")
        }
        try await apns.shutdown()
    }

    @Test func aTokenSeesAndAnswersOnlyItsOwnDevicesCard() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let other = try await client.activityDevice(number: 2)
            try await start(client, apns, as: device)
            let foreign = try await client.activity(.get, "/activities/deploy?wait=5", as: other)
            #expect(foreign.status == .notFound)
            #expect(try foreign.problem()["code"] == "activity.not_found")
            #expect(try await answer(client, "deploy", #"{"option": "approve"}"#, as: other.owner).status == .notFound)
            #expect(try await client.activity(.get, "/activities/deploy", as: device).jsonObject?["answer"] == .null)
            #expect(try await answer(client, "deploy", #"{"option": "approve"}"#, as: device.owner).status == .noContent)
        }
        try await apns.shutdown()
    }
}
