import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Server-managed activity behaviours, run from the store with a controllable clock: the stale end, a countdown's
/// warning and end after a restart, deletion after `ended_ttl` (issue 31).
@Suite("PushWard activities: server-managed behaviours")
struct ActivityScheduleTests {
    static let updateToken = String(repeating: "ef56", count: 16)

    @Test func anActivityWithoutUpdatesPastItsStaleTTLIsEnded() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let start = try await client.activity(.patch, "/activities/door?upsert=true", #"{"state": "ongoing", "stale_ttl": 60}"#, as: device)
            #expect(start.status == .created)
            #expect(await eventually { PushWardActivityTests.activityPushes(apns).count == 1 })
            let stale = try #require(PushWardActivityTests.activityPushes(apns).first?.aps?["stale-date"]?.doubleValue)
            #expect(stale == (apns.server.clock.now().timeIntervalSince1970 + 60).rounded(.down))
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "door", as: device).status == .noContent)
            apns.server.clock.advance(by: 59)
            try await Task.sleep(for: .seconds(1))
            #expect(PushWardActivityTests.activityPushes(apns).count == 1)
            apns.server.clock.advance(by: 2)
            #expect(await eventually { PushWardActivityTests.activityPushes(apns).count == 2 })
            let end = try #require(PushWardActivityTests.activityPushes(apns).last)
            #expect(end.aps?["event"] == "end")
            #expect(end.deviceToken == Self.updateToken)
            #expect(try await client.activity(.get, "/activities/door", as: device).jsonObject?["state"] == "ended")
        }
        try await apns.shutdown()
    }

    @Test func aCountdownsWarningAndEndGoOutOnTimeAfterARestart() async throws {
        let apns = try await APNsTestServer.start()
        let now = Int(apns.server.clock.now().timeIntervalSince1970)
        let device = try await apns.server.run { client in
            let device = try await client.activityDevice()
            let content = #"{"template": "countdown", "end_date": \#(now + 600), "warning_threshold": 120, "completion_message": "Done!"}"#
            let start = try await client.activity(
                .patch, "/activities/timer?upsert=true", #"{"state": "ongoing", "content": \#(content)}"#, as: device)
            #expect(start.status == .created)
            #expect(await eventually { PushWardActivityTests.activityPushes(apns).count == 1 })
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "timer", as: device).status == .noContent)
            return device
        }
        // Herald is down while the warning falls due; the next start sends it at once, then the end on time.
        apns.server.clock.advance(by: 481)
        try await apns.server.run { client in
            #expect(await eventually { PushWardActivityTests.activityPushes(apns).count == 2 })
            let warning = try #require(PushWardActivityTests.activityPushes(apns).last)
            #expect(warning.aps?["event"] == "update")
            #expect(warning.header("apns-priority") == "10")
            #expect(warning.aps?["alert"]?.objectValue?["body"] == "2 minutes left")
            apns.server.clock.advance(by: 110)
            try await Task.sleep(for: .seconds(1))
            #expect(PushWardActivityTests.activityPushes(apns).count == 2)  // exactly once
            apns.server.clock.advance(by: 10)
            #expect(await eventually { PushWardActivityTests.activityPushes(apns).count == 3 })
            let end = try #require(PushWardActivityTests.activityPushes(apns).last)
            #expect(end.aps?["event"] == "end")
            #expect(end.aps?["content-state"]?.objectValue?["state"] == "Done!")
            #expect(try await client.activity(.get, "/activities/timer", as: device).jsonObject?["state"] == "ended")
        }
        try await apns.shutdown()
    }

    @Test func anEndedActivityIsDeletedAfterItsEndedTTL() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let created = try await client.activity(.post, "/activities", #"{"slug": "once", "name": "Once", "ended_ttl": 30}"#, as: device)
            #expect(created.status == .created)
            #expect(try await client.activity(.patch, "/activities/once", #"{"state": "ongoing"}"#, as: device).status == .ok)
            #expect(try await client.activity(.patch, "/activities/once", #"{"state": "ended"}"#, as: device).status == .ok)
            apns.server.clock.advance(by: 29)
            try await Task.sleep(for: .seconds(1))
            #expect(try await client.activity(.get, "/activities/once", as: device).status == .ok)
            apns.server.clock.advance(by: 2)
            #expect(try await eventually { try await client.activity(.get, "/activities/once", as: device).status == .notFound })
        }
        try await apns.shutdown()
    }

    @Test func aStartThatExpiresInTheOutboxIsSentAgainWithTheNewestState() async throws {
        let apns = try await APNsTestServer.start()
        apns.production.failNext(1_000_000, status: 503, reason: "ServiceUnavailable")
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let start = try await client.activity(
                .patch, "/activities/bus?upsert=true", #"{"state": "ongoing", "content": {"template": "generic", "state": "Late"}}"#, as: device)
            #expect(start.status == .created)
            #expect(await eventually { !apns.production.requests.isEmpty })
            // APNs stays away past the push's 10 minutes in the outbox; then it is back.
            for _ in 0..<7 {
                apns.server.clock.advance(by: 100)
                try await Task.sleep(for: .milliseconds(300))
            }
            apns.production.clearFaults()
            // The clock goes on in small steps until the dispatcher's look at the pending push falls due: under load
            // the first hand-over may have ended late, which sets that look later (its lifetime after the hand-over).
            #expect(
                await eventually {
                    apns.server.clock.advance(by: 5)
                    return PushWardActivityTests.activityPushes(apns).count == 1
                })
            let push = try #require(PushWardActivityTests.activityPushes(apns).first)
            #expect(push.aps?["event"] == "start")
            #expect(push.deviceToken == device.pushToStartToken)
            #expect(push.aps?["content-state"]?.objectValue?["state"] == "Late")
        }
        try await apns.shutdown()
    }
}
