import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39, section 3: repeats live in the store, not in the process: after `kill -9` the restarted instance sends
/// the next repeat of a receipt made before the kill.
@Suite("Receipts across kill -9", .serialized)
struct ReceiptCrashTests {
    @Test func aReceiptMadeBeforeKillMinus9RepeatsAfterTheRestart() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path, "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_INSTANCE_ID": "receipt-crash",
        ]) { _, new in new }
        let request = ScheduledSendCrashTests.request
        let first = try await HeraldProcess(environment: environment)
        var base = "http://127.0.0.1:\(try await first.port())"
        let registered = try await request(.POST, base + "/api/push/register", #"{"platform": "websocket"}"#, nil)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        let secret = try #require(registered.json["device_secret"]?.stringValue)
        let basic = "Basic " + Data("\(userID):\(secret)".utf8).base64EncodedString()
        let created = try await request(.POST, base + "/api/push/tokens", #"{"name": "crash"}"#, basic)
        let bearer = "Bearer " + (try #require(created.json["token"]?.stringValue))
        let sent = try await request(
            .POST, base + "/notifications", #"{"title": "Alarm", "body": "Smoke", "acknowledge": {"repeat_seconds": 30, "expire_seconds": 120}}"#,
            bearer)
        #expect(sent.status == 201)
        let receipt = try #require(sent.json["receipt"]?.stringValue)

        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)
        let second = try await HeraldProcess(environment: environment)
        base = "http://127.0.0.1:\(try await second.port())"
        // The first repeat is due 30 s after the send, whichever process is running then.
        let repeated = await eventually(attempts: 1_200) {
            (try? await request(.GET, base + "/notifications/receipts/\(receipt)", nil, bearer).json["repeats_sent"]) == .int(1)
        }
        #expect(repeated, "log:\n\(second.log)")
        let shown = try await request(.GET, base + "/notifications/receipts/\(receipt)", nil, bearer).json
        #expect(shown["status"] == "active")
        // The repeat is a notification of the device (parked: no client is connected), not in its inbox of its own.
        let inbox = try await request(.GET, base + "/api/push/inbox", nil, basic).json
        guard case .array(let items)? = inbox["items"] else { throw TestFailure("items is not an array") }
        #expect(items.count == 1)

        second.kill(SIGTERM)
        #expect(await second.waitForExit() == 0)
    }
}
