import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 39, section 7: `HERALD_RETENTION`, `HERALD_DEVICE_IDLE_DAYS`, and a full store over real HTTP.
@Suite("Retention")
struct RetentionTests {
    @Test("HERALD_RETENTION is whole seconds from 60, 30 days by default; HERALD_DEVICE_IDLE_DAYS is off by default")
    func configurationBoundaries() throws {
        let defaults = try ConfigurationLoader.load(file: nil, environment: [:])
        #expect(defaults.retention == 30 * 86_400)
        #expect(defaults.deviceIdleDays == nil)
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_RETENTION": "60"]).retention == 60)
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_RETENTION": "31536000"]).retention == 31_536_000)
        for refused in ["59", "0", "-60", "1.5", "60s", "99999999999999999999"] {
            #expect(throws: ConfigurationError.self, "HERALD_RETENTION=\(refused)") {
                _ = try ConfigurationLoader.load(file: nil, environment: ["HERALD_RETENTION": refused])
            }
        }
        do {
            _ = try ConfigurationLoader.load(file: nil, environment: ["HERALD_RETENTION": "59"])
        } catch {
            #expect("\(error)".contains("HERALD_RETENTION"), "\(error)")
        }
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_DEVICE_IDLE_DAYS": "1"]).deviceIdleDays == 1)
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_DEVICE_IDLE_DAYS": "365"]).deviceIdleDays == 365)
        for refused in ["0", "-1", "36501", "x"] {
            #expect(throws: ConfigurationError.self, "HERALD_DEVICE_IDLE_DAYS=\(refused)") {
                _ = try ConfigurationLoader.load(file: nil, environment: ["HERALD_DEVICE_IDLE_DAYS": refused])
            }
        }
    }

    /// A store at `HERALD_DATABASE_MAX_BYTES` answers sends 503 and `/readyz` 503; once retention deletes the old
    /// notifications (the test clock moved past it), both recover without anyone freeing space by hand.
    @Test("A full store makes /readyz and sends answer 503 until retention frees space, then both recover")
    func aFullStoreRecoversThroughRetention() async throws {
        var server = try TestServer(dailyLimit: 1_000_000)
        server.configuration.databaseMaximumBytes = 512 * 1_024
        server.configuration.retention = 60
        server.configuration.retentionInterval = .milliseconds(50)
        let store = try SQLiteStore(path: server.databasePath, maximumBytes: 512 * 1_024)
        server.store = store
        let clock = server.clock
        try await server.run { client in
            let device = try await client.register(token: Fixtures.apnsToken(1))
            let userID = try #require(UserID(device.userID))
            let stored = try #require(try await store.device(userID: userID))
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            // Delivered notifications (as the engine would have saved them) until the file refuses more.
            // Batches of 20 until one is refused, then one at a time until 5 in a row are: near the cap some writes
            // still fit and others not.
            var filled = 0
            var refusedInARow = 0
            var batchSize = 20
            while filled < 100_000, refusedInARow < 5 {
                let now = clock.now()
                let batch = (0..<batchSize).map { _ in
                    var notification = Fixtures.notification(for: stored, at: now)
                    notification.payload = Data(repeating: 0x61, count: 1_000)
                    return notification
                }
                do {
                    let lease = Lease(owner: "filler", expiresAt: now.addingTimeInterval(3_600))
                    let quota = QuotaRequest(day: UTCDay(containing: now).description, maximum: nil)
                    _ = try await store.commit(
                        WriteBatch(accepts: batch.map { AcceptRequest(notification: $0, quota: quota, lease: lease) }, owner: "filler"))
                    let outcomes = batch.map { notification in
                        var delivered = notification
                        delivered.status = .delivered
                        return DeliveryOutcome(notification: delivered)
                    }
                    _ = try await store.commit(WriteBatch(outcomes: outcomes, owner: "filler"))
                    filled += batch.count
                    refusedInARow = 0
                } catch {
                    batchSize = 1
                    refusedInARow += 1
                }
            }
            #expect(filled > 0 && filled < 100_000)
            let send = #"{"user_id": "\#(device.userID)", "title": "Full", "body": "\#(String(repeating: "x", count: 1_000))"}"#
            let refused = try await client.post("/api/push/notify", send)
            #expect(refused.status == .serviceUnavailable)
            #expect(try refused.json()["code"] == "store_unavailable")
            let notReady = try await client.execute(uri: "/readyz", method: .get)
            #expect(notReady.status == .serviceUnavailable)
            #expect(try notReady.json()["status"] == "store cannot write")

            clock.advance(by: 61)
            let recovered = try await eventually {
                try await client.execute(uri: "/readyz", method: .get).status == .ok
            }
            #expect(recovered, "/readyz said ready again once retention deleted the old notifications")
            let accepted = try await client.post("/api/push/notify", send)
            #expect(accepted.status.code < 300, "\(accepted.status)")
            #expect(try await store.recentNotifications(deviceID: stored.id, limit: 10).count == 1, "only the new one is left")
        }
    }

    @Test("The dashboard shows how many devices are idle: for HERALD_DEVICE_IDLE_DAYS, or 90 days when it is off")
    func theDashboardCountsIdleDevices() async throws {
        for idleDays in [nil, 30] as [Int?] {
            var server = try AdminDashboardTests.server()
            server.configuration.deviceIdleDays = idleDays
            // Passes run only at start: the count is what the dashboard reads, not what a pass left.
            server.configuration.retentionInterval = .seconds(3_600)
            let clock = server.clock
            try await server.run { client in
                _ = try await client.register(token: Fixtures.apnsToken(1))
                _ = try await client.register(token: Fixtures.apnsToken(2))
                clock.advance(by: 100 * 86_400)
                let session = try await client.adminLogin()
                let page = try await client.execute(uri: "/admin", method: .get, headers: session.headers).text
                #expect(page.contains(#"id="idle-devices">2<"#), "\(idleDays.map(String.init) ?? "off")")
                let rule = idleDays == nil ? "idle for 90 days (kept: HERALD_DEVICE_IDLE_DAYS is off)" : "idle for 30 days (removed by HERALD_DEVICE_IDLE_DAYS)"
                #expect(page.contains(rule), "\(page)")
            }
        }
    }
}
