import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

/// Topics on PostgreSQL with two real `herald serve` processes: a send to a topic of 50 members is accepted in one
/// transaction by one instance, which is killed with SIGKILL before any of its deliveries is answered; the other takes
/// the 50 over when their leases expire, and each member's notification reaches APNs exactly once.
@Suite("Topics on PostgreSQL")
struct TopicClusterTests {
    @Test func postgresIsThereWhenRequired() {
        if HeraldCluster.postgresURL == nil, HeraldCluster.isPostgresRequired {
            Issue.record("HERALD_REQUIRE_POSTGRES=1 but HERALD_TEST_POSTGRES_URL is not set")
        }
    }

    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func aFanOutOfFiftySurvivesKillNineBetweenAcceptAndDelivery() async throws {
        let cluster = try await HeraldCluster(
            count: 2, options: ["HERALD_LEASE_SECONDS": "3", "HERALD_DELIVERY_WAIT_MS": "0", "HERALD_REGISTRATIONS_PER_MINUTE": "0"])
        var members: [Registration] = []
        for index in 1...50 {
            let registered = try await clusterRequest(
                .POST, cluster.base(index % 2) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(index))"}"#)
            members.append(
                Registration(
                    userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue)))
        }
        let created = try await clusterRequest(.POST, cluster.base(0) + "/api/push/topics", body: "{}", headers: [basicAuthorization(members[0])])
        #expect(created.status == 201)
        let topicID = try #require(created.json["topic_id"]?.stringValue)
        let code = try #require(created.json["join_code"]?.stringValue)
        for member in members.dropFirst() {
            let joined = try await clusterRequest(
                .POST, cluster.base(1) + "/api/push/topics/\(topicID)/members", body: #"{"join_code": "\#(code)"}"#,
                headers: [basicAuthorization(member)])
            #expect(joined.status == 201)
        }

        // Instance 0's pushes are never answered: it holds all 50 when it dies.
        cluster.apns.stallNext(50)
        let sent = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/notify", body: #"{"user_id": "\#(topicID)", "title": "Fire drill", "body": "Now"}"#)
        #expect(sent.status == 201)
        #expect(sent.json["delivery"] == "all")
        guard case .array(let outcomes)? = sent.json["members"] else {
            Issue.record("no members in \(sent.json)")
            try await cluster.stop()
            return
        }
        let ids = Set(outcomes.compactMap { $0.objectValue?["id"]?.stringValue })
        #expect(ids.count == 50)
        cluster.instances[0].kill(SIGKILL)
        #expect(await cluster.instances[0].waitForExit() != 0)
        cluster.apns.clearFaults()

        let everyDelivered = await eventually(attempts: 2_400) {
            Set(cluster.apns.acceptedPushes.compactMap { $0.header("apns-id") }).isSuperset(of: ids)
        }
        #expect(everyDelivered)
        let pushes = cluster.apns.acceptedPushes.filter { ids.contains($0.header("apns-id") ?? "") }
        #expect(pushes.count == 50, "each member's notification reaches APNs once")
        #expect(Set(pushes.compactMap(\.deviceToken)) == Set((1...50).map { Fixtures.apnsToken($0) }))

        // Each member's status, read on the surviving instance with the topic id.
        let status = try await clusterRequest(
            .GET, cluster.base(1) + "/api/push/notifications/\(ids.first ?? "")", headers: [("Authorization", "Bearer \(topicID)")])
        #expect(status.status == 200)
        #expect(status.json["status"] == "delivered")
        try await cluster.stop()
    }
}
