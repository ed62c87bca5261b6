import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An activity change answered 2xx survives `kill -9`, and what was handed on before the crash is never followed by
/// an older state (issue 31 §1).
@Suite("PushWard activities: crash recovery", .serialized)
struct ActivityCrashRecoveryTests {
    @Test func acceptedChangesSurviveKillMinus9AndOnlyTheNewestFollowsTheStart() async throws {
        let key = TestKey()
        let topic = "io.herald.activities"
        let apns = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic])
        apns.failNext(1_000_000, status: 503, reason: "ServiceUnavailable")  // nothing gets through before the crash
        let directory = try TemporaryDirectory.make()
        let environment = HeraldProcess.serveEnvironment([
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path, "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_APNS_KEY_PATH": try key.writeP8(in: directory), "HERALD_APNS_KEY_ID": key.keyID,
            "HERALD_APNS_TEAM_ID": key.teamID, "HERALD_APNS_TOPIC": topic,
            "HERALD_APNS_PRODUCTION_URL": apns.baseURL, "HERALD_APNS_SANDBOX_URL": apns.baseURL, "HERALD_APNS_CA_PATH": apns.caPath,
            "HERALD_INSTANCE_ID": "activity-crash", "HERALD_LOG_LEVEL": "debug",
        ])
        let first = try await HeraldProcess(environment: environment)
        var base = "http://127.0.0.1:\(try await first.port())"
        let startToken = Fixtures.apnsToken(0x61)
        let registered = try await clusterRequest(
            .POST, base + "/api/push/register",
            body: #"{"token": "\#(Fixtures.apnsToken(0x60))", "live_activity_push_to_start_token": "\#(startToken)"}"#)
        let owner = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))
        let created = try await clusterRequest(.POST, base + "/api/push/tokens", body: #"{"name": "crash"}"#, headers: [basicAuthorization(owner)])
        let bearer = ("Authorization", "Bearer " + (try #require(created.json["token"]?.stringValue)))

        for (index, step) in ["Queued", "Building", "Testing"].enumerated() {
            let body = index == 0 ? #"{"state": "ongoing", "content": {"template": "generic", "state": "Queued"}}"# : #"{"content": {"state": "\#(step)"}}"#
            let changed = try await clusterRequest(.PATCH, base + "/activities/ci" + (index == 0 ? "?upsert=true" : ""), body: body, headers: [bearer])
            #expect(changed.status == (index == 0 ? 201 : 200))
        }
        #expect(await eventually { !apns.requests.isEmpty })  // the start is in the outbox, retried
        try await Task.sleep(for: .seconds(1))
        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)
        apns.clearFaults()
        let second = try await HeraldProcess(environment: environment)
        base = "http://127.0.0.1:\(try await second.port())"

        func activityPushes() -> [APNsDouble.RecordedRequest] {
            apns.acceptedPushes.filter { $0.header("apns-push-type") == "liveactivity" }
        }
        #expect(await eventually(attempts: 600) { activityPushes().count == 1 })
        let start = try #require(activityPushes().first)
        #expect(start.aps?["event"] == "start")
        #expect(start.deviceToken == startToken)
        // The app reports its token; the newest accepted state follows, once, and nothing older.
        let updateToken = String(repeating: "7e", count: 32)
        let reported = try await clusterRequest(
            .PUT, base + "/api/push/activities/ci/token", body: #"{"token": "\#(updateToken)"}"#, headers: [basicAuthorization(owner)])
        #expect(reported.status == 204)
        let updated = await eventually { activityPushes().count == 2 }
        #expect(updated, "no update after the token; the restarted instance's log:\n\(updated ? "" : second.log)")
        try await Task.sleep(for: .seconds(1))
        let pushes = activityPushes()
        #expect(pushes.count == 2)
        #expect(pushes.last?.aps?["event"] == "update")
        #expect(pushes.last?.aps?["content-state"]?.objectValue?["state"] == "Testing")
        let timestamps = pushes.compactMap { $0.aps?["timestamp"]?.doubleValue }
        #expect(timestamps.count == 2 && timestamps[0] < timestamps[1])
        second.kill(SIGTERM)
        _ = await second.waitForExit()
        try await apns.shutdown()
    }
}
