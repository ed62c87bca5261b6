import AsyncHTTPClient
import Foundation
import HeraldCore
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
        ]) { _, new in new }

        let first = try HeraldProcess(environment: environment)
        let port = try await first.port()
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

        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)
        apns.clearFaults()

        let second = try HeraldProcess(environment: environment)
        _ = try await second.port()
        let delivered = await eventually(attempts: 600) {
            Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }).isSuperset(of: accepted)
        }
        #expect(delivered, "delivered \(apns.acceptedPushes.count) of \(accepted.count)")
        #expect(Set(apns.acceptedPushes.compactMap { $0.header("apns-id") }) == accepted)

        second.kill(SIGTERM)
        #expect(await second.waitForExit() == 0, "graceful shutdown on SIGTERM; log:\n\(second.log)")
        try await apns.shutdown()
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
