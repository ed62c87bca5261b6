import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Crash recovery", .serialized)
struct CrashRecoveryTests {
    @Test func killMinus9LosesNoAcceptedNotification() async throws {
        let key = TestKey()
        let topic = "io.herald.crash"
        let apns = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic])
        apns.failNext(1_000_000, status: 503, reason: "ServiceUnavailable")  // nothing gets through before the crash
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_APNS_KEY_PATH": try key.writeP8(in: directory), "HERALD_APNS_KEY_ID": key.keyID,
            "HERALD_APNS_TEAM_ID": key.teamID, "HERALD_APNS_TOPIC": topic,
            "HERALD_APNS_PRODUCTION_URL": apns.baseURL, "HERALD_APNS_SANDBOX_URL": apns.baseURL,
            "HERALD_APNS_CA_PATH": apns.caPath,
            // The restarted process is the same instance: it takes back the leases of the retries in flight at the
            // kill at once instead of after they expire (leasesOfAKilledInstanceAreTakenOverAfterTheyExpire).
            "HERALD_INSTANCE_ID": "apns-crash",
        ]) { _, new in new }

        let first = try await HeraldProcess(environment: environment)
        let port = try await first.port()
        // Without FCM options Herald starts all the same and says so once.
        #expect(first.log.components(separatedBy: "FCM is not configured").count == 2, "\(first.log)")
        let base = "http://127.0.0.1:\(port)"
        let registered = try await post(base + "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(0x5a))"}"#)
        #expect(registered.status == 201)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        var accepted: Set<String> = []
        for index in 0..<25 {
            let sent = try await post(base + "/api/push/notify", #"{"user_id": "\#(userID)", "title": "Event \#(index)", "body": "Garden"}"#)
            #expect(sent.status == 201)
            #expect(sent.json["status"] == "queued")
            if let id = sent.json["id"]?.stringValue { accepted.insert(id) }
        }
        #expect(accepted.count == 25)
        #expect(apns.acceptedPushes.isEmpty)

        let second = try await killAndRestart(first, environment: environment) { apns.clearFaults() }
        let delivered = await eventually(attempts: 600) {
            Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }).isSuperset(of: accepted)
        }
        #expect(delivered, "delivered \(apns.acceptedPushes.count) of \(accepted.count)")
        // A set: the killed process retries until the kill, and a retry that was on the wire then may be read, and
        // accepted, once the double has recovered, beside the restarted process's copy (at least once, as APNs
        // itself promises no more).
        #expect(Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }) == accepted)

        await stopGracefully(second)
        try await apns.shutdown()
    }

    /// Web Push devices: notifications accepted while the push service answered 503 are delivered after a `kill -9`
    /// and a restart, each decrypting to its own notification (at least once: a retry on the wire at the kill may
    /// also arrive, as with APNs above).
    @Test func killMinus9LosesNoAcceptedNotificationForWebPushDevices() async throws {
        let push = try await WebPushDouble.start()
        push.failNext(1_000_000, .init(status: 503))  // nothing gets through before the crash
        let subscription = push.makeSubscription()
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path, "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_VAPID_SUBJECT": "mailto:ops@herald.test", "HERALD_WEBPUSH_ALLOWED_HOSTS": "127.0.0.0/8",
            "HERALD_WEBPUSH_CA_PATH": push.caPath, "HERALD_INSTANCE_ID": "webpush-crash",
        ]) { _, new in new }
        let first = try await HeraldProcess(environment: environment)
        let base = "http://127.0.0.1:\(try await first.port())"
        let registration = #"{"platform": "webpush", "subscription": {"endpoint": "\#(subscription.endpoint)", "keys": "#
            + #"{"p256dh": "\#(subscription.subscriber.p256dh)", "auth": "\#(subscription.subscriber.authText)"}}}"#
        let registered = try await post(base + "/api/push/register", registration)
        #expect(registered.status == 201)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        var accepted: Set<String> = []
        for index in 0..<20 {
            let sent = try await post(base + "/api/push/notify", #"{"user_id": "\#(userID)", "title": "Event \#(index)", "body": "Garden"}"#)
            #expect(sent.status == 201)
            if let id = sent.json["id"]?.stringValue { accepted.insert(id) }
        }
        #expect(accepted.count == 20)
        #expect(push.deliveredCount == 0)

        let second = try await killAndRestart(first, environment: environment) { push.clearFaults() }
        let delivered = await eventually(attempts: 600) {
            Set(push.delivered.compactMap { $0.json["id"]?.stringValue }).isSuperset(of: accepted)
        }
        #expect(delivered, "delivered \(push.deliveredCount) of \(accepted.count)")
        #expect(Set(push.delivered.compactMap { $0.json["id"]?.stringValue }) == accepted)
        #expect(push.delivered.allSatisfy { $0.json["body"] == "Garden" })
        #expect(push.refused.isEmpty, "\(push.refused)")

        await stopGracefully(second)
        try await push.shutdown()
    }

    /// FCM devices: notifications whose attempts were in flight at a `kill -9` (FCM never answered them) are
    /// delivered after a restart under the same instance name, each once.
    ///
    /// The double stalls every first attempt, and the kill comes only once all of them have reached it, so no
    /// request of the killed process can still be read by the double after the restart. (When FCM answers 503
    /// instead, the killed process retries until the kill, and a retry that was on the wire then may be read, and
    /// accepted, after the double recovered: a second copy no gateway can prevent, which this test would count.)
    @Test func killMinus9LosesNoAcceptedNotificationForFCMDevices() async throws {
        let fcm = try await FCMDouble.start(projectID: FCMTestServer.account.projectID, serviceAccount: FCMTestServer.account)
        fcm.stallNext(24)  // every first attempt stays unanswered: all are in flight at the kill
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_FCM_SERVICE_ACCOUNT_JSON": fcm.serviceAccountJSON, "HERALD_FCM_BASE_URL": fcm.baseURL,
            "HERALD_FCM_CA_PATH": fcm.caPath, "HERALD_FCM_TIMEOUT": "60",
            // The restarted process is the same instance: it takes back the leases of attempts in flight at the kill.
            "HERALD_INSTANCE_ID": "fcm-crash",
        ]) { _, new in new }

        let first = try await HeraldProcess(environment: environment)
        let port = try await first.port()
        let base = "http://127.0.0.1:\(port)"
        var userIDs: [String] = []
        for device in 0..<3 {
            let registered = try await post(base + "/api/push/register", #"{"platform": "fcm", "token": "\#(Fixtures.fcmToken(device + 20))"}"#)
            #expect(registered.status == 201)
            userIDs.append(try #require(registered.json["user_id"]?.stringValue))
        }
        var titles: Set<String> = []
        for index in 0..<24 {
            let title = "Event \(index)"
            let sent = try await post(base + "/api/push/notify", #"{"user_id": "\#(userIDs[index % 3])", "title": "\#(title)", "body": "Garden"}"#)
            #expect(sent.status == 201)
            #expect(sent.json["status"] == "queued")
            titles.insert(title)
        }
        #expect(await eventually(attempts: 600) { fcm.requests.count == 24 }, "every first attempt reached the double")
        #expect(fcm.acceptedMessages.isEmpty)

        let second = try await killAndRestart(first, environment: environment) { fcm.clearFaults() }
        func deliveredTitles() -> [String] {
            fcm.acceptedMessages.compactMap { $0.message["notification"]?.objectValue?["title"]?.stringValue }
        }
        let delivered = await eventually(attempts: 600) { Set(deliveredTitles()).isSuperset(of: titles) }
        #expect(delivered, "delivered \(fcm.acceptedMessages.count) of \(titles.count)")
        #expect(deliveredTitles().sorted() == titles.sorted())

        await stopGracefully(second)
        try await fcm.shutdown()
    }

    /// Group commit answers a request only once its own notification is committed: every notification answered 201
    /// before a `kill -9` (taken while requests are in flight) is in the SQLite file afterwards.
    @Test func everyAnsweredNotificationIsInTheFileAfterKillMinus9DuringConcurrentAccepts() async throws {
        let directory = try TemporaryDirectory.make()
        let path = directory.appendingPathComponent("herald.sqlite").path
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info", "HERALD_DATABASE_URL": path,
            "HERALD_RATE_LIMIT_DAILY": "1000000", "HERALD_DELIVERY_WAIT_MS": "0", "HERALD_MAX_PENDING_PER_DEVICE": "1000000",
        ]) { _, new in new }
        let herald = try await HeraldProcess(environment: environment)
        let port = try await herald.port()
        var userIDs: [String] = []
        for index in 0..<4 {
            let registered = try await post("http://127.0.0.1:\(port)/api/push/register", #"{"token": "\#(Fixtures.apnsToken(index + 1))"}"#)
            userIDs.append(try #require(registered.json["user_id"]?.stringValue))
        }
        final class Answered: Sendable {
            let ids = Mutex<Set<String>>([])
        }
        let answered = Answered()
        let users = userIDs
        let senders = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<16 {
                    group.addTask {
                        var index = 0
                        while !Task.isCancelled {
                            let body = #"{"user_id": "\#(users[sender % 4])", "title": "s\#(sender)-\#(index)", "body": "b"}"#
                            guard let id = try? await postNotify(port: port, body: body) else { return }
                            answered.ids.withLock { _ = $0.insert(id) }
                            index += 1
                        }
                    }
                }
            }
        }
        #expect(await eventually { answered.ids.withLock { $0.count } >= 300 })
        herald.kill(SIGKILL)  // requests are in flight
        #expect(await herald.waitForExit() != 0)
        senders.cancel()  // requests queued for a connection would otherwise wait for their timeout
        await senders.value
        let ids = answered.ids.withLock { $0 }
        let store = try SQLiteStore(path: path)
        var missing = 0
        for id in ids {
            if try await store.notification(id: try #require(UUID(uuidString: id))) == nil { missing += 1 }
        }
        #expect(missing == 0, "\(missing) of \(ids.count) answered notifications are not in the file")
        try await store.close()
    }

    /// A notification leased by an instance that died is delivered by the next one, once the lease has expired,
    /// and exactly once.
    @Test func leasesOfAKilledInstanceAreTakenOverAfterTheyExpire() async throws {
        let key = TestKey()
        let topic = "io.herald.lease"
        let apns = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic])
        apns.stallNext(1_000)  // the first instance's attempts never get an answer: they are in flight at the kill
        let directory = try TemporaryDirectory.make()
        let path = directory.appendingPathComponent("herald.sqlite").path
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info", "HERALD_DATABASE_URL": path,
            "HERALD_DELIVERY_WAIT_MS": "0", "HERALD_LEASE_SECONDS": "3", "HERALD_APNS_TIMEOUT": "60",
            "HERALD_APNS_KEY_PATH": try key.writeP8(in: directory), "HERALD_APNS_KEY_ID": key.keyID,
            "HERALD_APNS_TEAM_ID": key.teamID, "HERALD_APNS_TOPIC": topic,
            "HERALD_APNS_PRODUCTION_URL": apns.baseURL, "HERALD_APNS_SANDBOX_URL": apns.baseURL,
            "HERALD_APNS_CA_PATH": apns.caPath,
        ]) { _, new in new }

        // Two instances (as on two hosts): the second must wait for the first one's leases to expire.
        let first = try await HeraldProcess(environment: environment.merging(["HERALD_INSTANCE_ID": "first"]) { _, new in new })
        let port = try await first.port()
        let base = "http://127.0.0.1:\(port)"
        let registered = try await post(base + "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(0x6b))"}"#)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        var ids: [UUID] = []
        for index in 0..<3 {
            let sent = try await post(base + "/api/push/notify", #"{"user_id": "\#(userID)", "title": "Event \#(index)", "body": "Garden"}"#)
            #expect(sent.status == 201)
            ids.append(try #require(sent.json["id"]?.stringValue.flatMap(UUID.init(uuidString:))))
        }
        #expect(await eventually { apns.requests.count == 3 }, "the three attempts reached the double")
        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)

        let store = try SQLiteStore(path: path)
        var expiries: [String: Date] = [:]
        for id in ids {
            let lease = try #require(try await store.lease(of: id), "the dead instance still holds the lease")
            expiries[id.uuidString.lowercased()] = lease.expiresAt
        }
        try await store.close()
        apns.clearFaults()

        let second = try await HeraldProcess(environment: environment.merging(["HERALD_INSTANCE_ID": "second"]) { _, new in new })
        _ = try await second.port()
        let wanted = Set(expiries.keys)
        #expect(await eventually(attempts: 600) { Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }) == wanted })
        for push in apns.acceptedPushes {
            let expiry = try #require(push.header("apns-id").flatMap { expiries[$0] })
            #expect(push.receivedAt >= expiry, "delivered before the dead instance's lease expired")
        }
        #expect(apns.acceptedPushes.count == 3, "each delivered exactly once")
        await stopGracefully(second)
        try await apns.shutdown()
    }

    /// Kills `process` with SIGKILL, lets the provider recover while it is down (`whileDown`), and starts the same
    /// instance again on the same database.
    private func killAndRestart(
        _ process: HeraldProcess, environment: [String: String], whileDown: () -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HeraldProcess {
        process.kill(SIGKILL)
        #expect(await process.waitForExit() != 0, sourceLocation: sourceLocation)
        whileDown()
        let restarted = try await HeraldProcess(environment: environment)
        _ = try await restarted.port()
        return restarted
    }

    /// SIGTERM, and a graceful exit (status 0).
    private func stopGracefully(_ process: HeraldProcess, sourceLocation: SourceLocation = #_sourceLocation) async {
        process.kill(SIGTERM)
        #expect(await process.waitForExit() == 0, "graceful shutdown on SIGTERM; log:\n\(process.log)", sourceLocation: sourceLocation)
    }

    private func post(_ url: String, _ body: String) async throws -> (status: UInt, json: JSONObject) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json = try JSONValue.decode(Data(bytes.readableBytesView)).objectValue ?? [:]
        return (response.status.code, json)
    }
}
