import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

/// PushWard activities on two `herald serve` processes sharing one PostgreSQL database: each server-managed push goes
/// out exactly once, and changes made on either instance reach the phone once each (issue 31).
@Suite("PushWard activities on several instances", .serialized)
struct ActivityMultiInstanceTests {
    static let updateToken = String(repeating: "9a8b", count: 16)

    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func aCountdownsWarningAndEndGoOutExactlyOnceWithTwoInstances() async throws {
        let cluster = try await HeraldCluster(count: 2)
        let startToken = Fixtures.apnsToken(0x71)
        let registered = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/register",
            body: #"{"token": "\#(Fixtures.apnsToken(0x70))", "live_activity_push_to_start_token": "\#(startToken)"}"#)
        let owner = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))
        let created = try await clusterRequest(
            .POST, cluster.base(1) + "/api/push/tokens", body: #"{"name": "timer"}"#, headers: [basicAuthorization(owner)])
        let bearer = ("Authorization", "Bearer " + (try #require(created.json["token"]?.stringValue)))

        let end = Int(Date().timeIntervalSince1970) + 4
        let content = #"{"template": "countdown", "end_date": \#(end), "warning_threshold": 2, "completion_message": "Done"}"#
        let start = try await clusterRequest(
            .PATCH, cluster.base(0) + "/activities/timer?upsert=true", body: #"{"state": "ongoing", "content": \#(content)}"#,
            headers: [bearer])
        #expect(start.status == 201)
        func activityPushes() -> [APNsDouble.RecordedRequest] {
            cluster.apns.acceptedPushes.filter { $0.header("apns-push-type") == "liveactivity" }
        }
        // The phone started it and reports its update token (to the other instance).
        #expect(await eventually { activityPushes().count == 1 })
        let token = try await clusterRequest(
            .PUT, cluster.base(1) + "/api/push/activities/timer/token", body: #"{"token": "\#(Self.updateToken)"}"#,
            headers: [basicAuthorization(owner)])
        #expect(token.status == 204)
        #expect(await eventually(attempts: 200) { activityPushes().count >= 3 })
        try await Task.sleep(for: .seconds(2))  // nothing more comes: each went out once
        let events = activityPushes().compactMap { $0.aps?["event"]?.stringValue }
        #expect(events == ["start", "update", "end"])
        #expect(activityPushes().dropFirst().allSatisfy { $0.deviceToken == Self.updateToken })
        let read = try await clusterRequest(.GET, cluster.base(1) + "/activities/timer", headers: [bearer])
        #expect(read.json["state"] == "ended")
        try await cluster.stop()
    }
}
