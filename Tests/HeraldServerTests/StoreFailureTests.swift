import Foundation
import HeraldCore
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

/// Issue 14, finding 7: a store that cannot write (here: a database at its size cap, which SQLite refuses exactly as
/// a full disk, `SQLITE_FULL`) shows in `/readyz`, is logged without flooding the log, and recovers.
@Suite("Store failures")
struct StoreFailureTests {
    @Test("A store that cannot write makes /readyz answer 503, is logged once, and recovers when space is freed")
    func aFullStoreIsVisibleAndRecovers() async throws {
        var server = try TestServer()
        server.configuration.databaseMaximumBytes = 256 * 1_024
        server.configuration.registrationsPerMinute = 0
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .info
        let app = try await buildApplication(server.configuration, clock: server.clock, logger: logger)
        try await app.test(.live) { client in
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            // Registrations until 20 in a row are refused: near the cap some writes still fit and others not.
            var registered: [Registration] = []
            var refusals: [TestResponse] = []
            for index in 0..<5_000 where refusals.count < 20 {
                let response = try await client.post(
                    "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(index))", "environment": "production"}"#)
                guard response.status == .created else {
                    refusals.append(response)
                    continue
                }
                refusals.removeAll()
                let body = try response.json()
                registered.append(
                    Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue)))
            }
            #expect(refusals.count == 20, "5,000 registrations fit in 256 KiB")
            for refusal in refusals {
                #expect(refusal.status == .serviceUnavailable)
                #expect(try refusal.json()["code"] == "store_unavailable")
            }

            let notReady = try await client.execute(uri: "/readyz", method: .get)
            #expect(notReady.status == .serviceUnavailable)
            #expect(try notReady.json()["status"] == "store cannot write")
            let reason = try notReady.json()["reason"]?.stringValue ?? ""
            #expect(reason.contains("database or disk is full"), "\(reason)")
            // At least 20 failed writes, one error line: the rest wait for the next report, a minute later.
            #expect(log.messages.filter { $0.hasPrefix("Store writes fail") }.count == 1)
            #expect(log.messages.filter { $0.hasPrefix("Store writes still fail") }.isEmpty)

            for device in registered {
                let removed = try await client.execute(uri: "/api/push/register", method: .delete, headers: device.basic)
                #expect(removed.status == .noContent)
            }
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            #expect(log.messages.contains("Store writes work again"))
            let afterwards = try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(20_000))"}"#)
            #expect(afterwards.status == .created)
        }
    }
}
