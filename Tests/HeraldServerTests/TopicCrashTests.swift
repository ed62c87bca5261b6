import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Topics on the embedded SQLite store with a real `herald serve` process: a send to a topic of 50 members is accepted
/// (all 50 durable before the 201), APNs never answers the first process's pushes, it is killed with SIGKILL, and the
/// restarted process delivers each member's notification exactly once. (PostgreSQL with two instances: TopicClusterTests.)
@Suite("Topics after kill -9 on SQLite", .serialized)
struct TopicCrashTests {
    @Test func aFanOutOfFiftySurvivesKillNineBetweenAcceptAndDelivery() async throws {
        let key = TestKey()
        let topic = "io.herald.topic-crash"
        let apns = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic])
        // The first process's 50 pushes are never answered: it holds all of them when it dies, and none of them can
        // be accepted later (a refused push retried on the wire could be), so each member's shows up exactly once.
        apns.stallNext(50)
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_DELIVERY_WAIT_MS": "0", "HERALD_REGISTRATIONS_PER_MINUTE": "0",
            "HERALD_APNS_KEY_PATH": try key.writeP8(in: directory), "HERALD_APNS_KEY_ID": key.keyID,
            "HERALD_APNS_TEAM_ID": key.teamID, "HERALD_APNS_TOPIC": topic,
            "HERALD_APNS_PRODUCTION_URL": apns.baseURL, "HERALD_APNS_SANDBOX_URL": apns.baseURL, "HERALD_APNS_CA_PATH": apns.caPath,
            // The restarted process is the same instance: it takes back its leases at once.
            "HERALD_INSTANCE_ID": "topic-crash",
        ]) { _, new in new }

        let first = try await HeraldProcess(environment: environment)
        let base = "http://127.0.0.1:\(try await first.port())"
        var members: [Registration] = []
        for index in 1...50 {
            let registered = try await clusterRequest(.POST, base + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(index))"}"#)
            members.append(
                Registration(
                    userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue)))
        }
        let created = try await clusterRequest(.POST, base + "/api/push/topics", body: "{}", headers: [basicAuthorization(members[0])])
        #expect(created.status == 201)
        let topicID = try #require(created.json["topic_id"]?.stringValue)
        let code = try #require(created.json["join_code"]?.stringValue)
        for member in members.dropFirst() {
            let joined = try await clusterRequest(
                .POST, base + "/api/push/topics/\(topicID)/members", body: #"{"join_code": "\#(code)"}"#, headers: [basicAuthorization(member)])
            #expect(joined.status == 201)
        }

        let sent = try await clusterRequest(
            .POST, base + "/api/push/notify", body: #"{"user_id": "\#(topicID)", "title": "Fire drill", "body": "Now"}"#)
        #expect(sent.status == 201)
        #expect(sent.json["delivery"] == "all")
        let outcomes = sent.json["members"]?.elements?.compactMap(\.objectValue) ?? []
        let ids = Set(outcomes.compactMap { $0["id"]?.stringValue })
        #expect(ids.count == 50)
        #expect(apns.acceptedPushes.isEmpty)

        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)
        apns.clearFaults()
        let second = try await HeraldProcess(environment: environment)
        _ = try await second.port()

        let everyDelivered = await eventually(attempts: 1_200) {
            Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }).isSuperset(of: ids)
        }
        #expect(everyDelivered, "delivered \(apns.acceptedPushes.count) of 50")
        let pushes = apns.acceptedPushes.filter { ids.contains($0.header("apns-id") ?? "") }
        #expect(pushes.count == 50, "each member's notification reaches APNs once")
        #expect(Set(pushes.compactMap(\.deviceToken)) == Set((1...50).map { Fixtures.apnsToken($0) }))
        #expect(Set(pushes.compactMap { $0.header("apns-id") }) == ids)

        second.kill(SIGTERM)
        #expect(await second.waitForExit() == 0)
        try await apns.shutdown()
    }
}
