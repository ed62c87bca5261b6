import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing

/// Issue 39: a long poll held by one instance learns of an answer the app reported to another instance on the same
/// PostgreSQL database (each instance reads the answers it has waiters for once a second).
@Suite("Answers across instances")
struct MultiInstanceAnswerTests {
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func aPollOnOneInstanceLearnsOfAnAnswerReportedToAnother() async throws {
        let cluster = try await HeraldCluster(count: 2)
        let registered = try await clusterRequest(.POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x39))"}"#)
        #expect(registered.status == 201)
        let device = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))
        let created = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/tokens", body: #"{"name": "sender"}"#, headers: [basicAuthorization(device)])
        let token = try #require(created.json["token"]?.stringValue)
        let bearer = ("Authorization", "Bearer \(token)")
        let sent = try await clusterRequest(
            .POST, cluster.base(0) + "/notifications", body: #"{"title": "Leak", "body": "Basement", "actions": [{"id": "ack", "title": "OK"}]}"#,
            headers: [bearer])
        #expect(sent.status == 201 && sent.json["answerable"] == true)
        let id = try #require(sent.json["id"]?.stringValue)

        // Held by instance 1; answered through instance 0.
        async let held = clusterRequest(.GET, cluster.base(1) + "/notifications/answers/\(id)?wait=25", headers: [bearer], timeout: .seconds(145))
        let answered = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/notifications/\(id)/answer", body: #"{"action_id": "ack"}"#, headers: [basicAuthorization(device)])
        #expect(answered.status == 204)
        let poll = try await held
        #expect(poll.status == 200)
        #expect(poll.json["status"] == "answered" && poll.json["action_id"] == "ack")
        // A second report through instance 1: the first answer stays.
        let again = try await clusterRequest(
            .POST, cluster.base(1) + "/api/push/notifications/\(id)/answer", body: #"{"action_id": "ack"}"#, headers: [basicAuthorization(device)])
        #expect(again.status == 409)
        try await cluster.stop()
    }
}
