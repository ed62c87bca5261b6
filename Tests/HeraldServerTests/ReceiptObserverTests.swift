import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Synchronization
import Testing

/// Issue 39, section 3: the hook the signed callbacks hang on: told once of a receipt acknowledged or expired, never of
/// one canceled or replaced.
@Suite("Receipts: the ended-receipt hook")
struct ReceiptObserverTests {
    final class RecordingObserver: ReceiptEndedObserver {
        let calls = Mutex<[(Receipt, APIToken.ID)]>([])
        func receiptEnded(_ receipt: Receipt, tokenID: APIToken.ID) async {
            calls.withLock { $0.append((receipt, tokenID)) }
        }
        var statuses: [String: Receipt.Status] {
            calls.withLock { Dictionary($0.map { ($0.0.id.lowercasedText, $0.0.status) }, uniquingKeysWith: { first, _ in first }) }
        }
        var count: Int { calls.withLock { $0.count } }
    }

    @Test func theObserverHearsOfAcknowledgedAndExpiredReceiptsOnceEach() async throws {
        var server = try TestServer(clock: TestClock(Date(timeIntervalSince1970: 1_780_000_000)))
        server.configuration.receiptPollInterval = .milliseconds(20)
        let observer = RecordingObserver()
        let clock = server.clock
        let app = try await buildApplication(server.configuration, clock: clock, receiptObserver: observer)
        try await PatientLiveTest.run(app) { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            func send(_ collapse: String, expire: Int) async throws -> (receipt: String, notification: String) {
                let json = try await client.sendAction(
                    token.bearer,
                    body: #"{"title": "T", "body": "B", "collapse_id": "\#(collapse)", "acknowledge": {"repeat_seconds": 30, "expire_seconds": \#(expire)}}"#
                ).json()
                return (try #require(json["receipt"]?.stringValue), try #require(json["id"]?.stringValue))
            }
            let acknowledged = try await send("a", expire: 600)
            let expiring = try await send("b", expire: 60)
            let canceled = try await send("c", expire: 600)
            let replaced = try await send("d", expire: 600)
            let newer = try await send("d", expire: 600)
            #expect(try await client.post("/notifications/receipts/\(canceled.receipt)/cancel", "", headers: token.bearer).status == .ok)
            let answer = #"{"action_id": "pw_ack"}"#
            #expect(try await client.post("/api/push/notifications/\(acknowledged.notification)/answer", answer, headers: owner.basic).status == .noContent)
            clock.advance(by: 60)
            #expect(try await eventually { try await client.receipt(expiring.receipt, token).json()["status"] == "expired" })
            #expect(try await client.receipt(replaced.receipt, token).json()["status"] == "replaced")
            #expect(observer.statuses == [acknowledged.receipt: .acknowledged, expiring.receipt: .expired])
            #expect(observer.calls.withLock { $0.allSatisfy { $0.1.lowercasedText == token.id } })
            // Once each: later passes and a second answer change nothing; the newer "d" expires in its turn.
            clock.advance(by: 600)
            #expect(try await client.post("/api/push/notifications/\(acknowledged.notification)/answer", answer, headers: owner.basic).status == .conflict)
            #expect(try await eventually { try await client.receipt(newer.receipt, token).json()["status"] == "expired" })
            try await Task.sleep(for: .milliseconds(200))
            #expect(observer.count == 3)
            #expect(observer.statuses == [acknowledged.receipt: .acknowledged, expiring.receipt: .expired, newer.receipt: .expired])
        }
    }
}
