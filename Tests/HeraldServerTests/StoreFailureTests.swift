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
        // Enough room that registrations fill pages of their own, which deleting them frees (the schema's tables and
        // indexes keep their root pages: at 256 KiB the registrations fitted in those, and deleting them freed nothing).
        server.configuration.databaseMaximumBytes = 512 * 1_024
        server.configuration.registrationsPerMinute = 0
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .info
        let app = try await buildApplication(server.configuration, clock: server.clock, logger: logger)
        try await PatientLiveTest.run(app) { client in
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
            #expect(refusals.count == 20, "5,000 registrations fit in 512 KiB")
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

    /// Issue 29, item 5: with the disk full, a small write that still fits (a device updated in place) cleared the
    /// failure, and `/readyz` said 200 while every send was refused.
    @Test("A small write that still fits on a full disk does not make /readyz say ready while sends fail")
    func aSmallWriteThatFitsDoesNotClearAFullDisk() async throws {
        var server = try TestServer(dailyLimit: 1_000_000)
        server.configuration.databaseMaximumBytes = 256 * 1_024
        server.configuration.registrationsPerMinute = 0
        try await server.run { client in
            let registered = try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(1))"}"#)
            let device = Registration(
                userID: try #require(try registered.json()["user_id"]?.stringValue),
                secret: try #require(try registered.json()["device_secret"]?.stringValue))
            let idle = try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(2))"}"#)
            let other = Registration(
                userID: try #require(try idle.json()["user_id"]?.stringValue),
                secret: try #require(try idle.json()["device_secret"]?.stringValue))
            // On the full store the engine keeps trying to claim and park what was accepted, and now and then one of
            // its writes fits and moves index entries, which can leave room for a notification again. So the check is
            // made on a send that was refused: until one is (at most 5 fillings), fill, update, ask, send and ask.
            var checked = false
            for _ in 0..<5 where !checked {
                let refusal = try await fillUntilTwentyRefusals(client, userID: device.userID)
                #expect(try refusal.json()["code"] == "store_unavailable")
                #expect(refusal.headers[.retryAfter] == "1")

                // A write that fits in its page: a device without notifications re-registered with its own credentials.
                let updated = try await client.post(
                    "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(2))"}"#, headers: other.basic)
                #expect(updated.status == .ok)
                let readyAfterUpdate = try await client.execute(uri: "/readyz", method: .get)
                let send = try await client.post("/api/push/notify", Self.filler(device.userID, "Still full"))
                guard send.status == .serviceUnavailable else {
                    #expect(send.status == .created)
                    continue
                }
                checked = true
                #expect(readyAfterUpdate.status == .serviceUnavailable, "/readyz says the store cannot write after a small write fit")
                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .serviceUnavailable, "/readyz says the store cannot write while sends fail")
                #expect(try ready.json()["status"] == "store cannot write")
            }
            #expect(checked, "five fillings of the store, and each time the engine's writes made room for the next send")
        }
    }

    private static func filler(_ userID: String, _ title: String) -> String {
        #"{"user_id": "\#(userID)", "title": "\#(title)", "body": "\#(String(repeating: "x", count: 200))"}"#
    }

    /// Sends until 20 in a row are refused (the disk is full for notifications) and returns the last refusal.
    private func fillUntilTwentyRefusals(_ client: any TestClientProtocol, userID: String) async throws -> TestResponse {
        var refusedInARow = 0
        var lastRefusal: TestResponse?
        for index in 0..<10_000 where refusedInARow < 20 {
            let response = try await client.post("/api/push/notify", Self.filler(userID, "Filler \(index)"))
            if response.status == .serviceUnavailable {
                refusedInARow += 1
                lastRefusal = response
            } else {
                refusedInARow = 0
            }
        }
        #expect(refusedInARow == 20, "10,000 notifications fit in 256 KiB")
        return try #require(lastRefusal)
    }
}
