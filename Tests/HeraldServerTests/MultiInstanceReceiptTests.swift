import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

/// Issue 39, section 3: with two instances on one PostgreSQL database, each repeat of a receipt goes out once (the
/// instances claim due repeats with a lease), whichever instance took the send.
@Suite("Receipts across instances")
struct MultiInstanceReceiptTests {
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func twoInstancesSendEachRepeatOnce() async throws {
        let cluster = try await HeraldCluster(count: 2)
        let registered = try await clusterRequest(.POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x3a))"}"#)
        #expect(registered.status == 201)
        let device = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))
        let created = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/tokens", body: #"{"name": "sender"}"#, headers: [basicAuthorization(device)])
        let bearer = ("Authorization", "Bearer \(try #require(created.json["token"]?.stringValue))")
        // Ten receipts, sent through both instances: one repeat each at 30 s, then the expiry at 60 s.
        var receipts: [String] = []
        for index in 0..<10 {
            let sent = try await clusterRequest(
                .POST, cluster.base(index % 2) + "/notifications",
                body: #"{"title": "Leak", "body": "Basement", "collapse_id": "r\#(index)", "acknowledge": {"repeat_seconds": 30, "expire_seconds": 60}}"#,
                headers: [bearer])
            #expect(sent.status == 201)
            receipts.append(try #require(sent.json["receipt"]?.stringValue))
        }
        let ended = await eventually(attempts: 2_400) {
            for (index, receipt) in receipts.enumerated() {
                let read = try? await clusterRequest(.GET, cluster.base((index + 1) % 2) + "/notifications/receipts/\(receipt)", headers: [bearer])
                guard read?.json["status"] == "expired" else { return false }
            }
            return true
        }
        #expect(ended)
        for (index, receipt) in receipts.enumerated() {
            let read = try await clusterRequest(.GET, cluster.base(0) + "/notifications/receipts/\(receipt)", headers: [bearer])
            #expect(read.json["repeats_sent"] == .int(1), "r\(index)")
            let pushes = cluster.apns.acceptedPushes.filter { $0.header("apns-collapse-id") == "r\(index)" }
            #expect(pushes.count == 2, "r\(index)")
        }
        try await cluster.stop()
    }
}
