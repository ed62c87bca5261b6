import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39, section 5: a scheduled send lives in the store, not in the process: after `kill -9` the restarted
/// instance sends it, once.
@Suite("Scheduled sends across kill -9", .serialized)
struct ScheduledSendCrashTests {
    @Test func aSendScheduledBeforeKillMinus9GoesOutOnceAfterTheRestart() async throws {
        let directory = try TemporaryDirectory.make()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE_URL": directory.appendingPathComponent("herald.sqlite").path, "HERALD_DELIVERY_WAIT_MS": "0",
            "HERALD_INSTANCE_ID": "scheduled-crash",
        ]) { _, new in new }
        let first = try await HeraldProcess(environment: environment)
        var base = "http://127.0.0.1:\(try await first.port())"
        let registered = try await Self.request(.POST, base + "/api/push/register", #"{"platform": "websocket"}"#)
        #expect(registered.status == 201)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        let secret = try #require(registered.json["device_secret"]?.stringValue)
        let basic = "Basic " + Data("\(userID):\(secret)".utf8).base64EncodedString()
        let created = try await Self.request(.POST, base + "/api/push/tokens", #"{"name": "crash"}"#, authorization: basic)
        let bearer = "Bearer " + (try #require(created.json["token"]?.stringValue))
        let sendAt = Date().addingTimeInterval(3).iso8601WithMilliseconds
        let scheduled = try await Self.request(
            .POST, base + "/notifications/scheduled",
            #"{"notification": {"title": "Alarm", "body": "Wake up"}, "send_at": "\#(sendAt)"}"#, authorization: bearer)
        #expect(scheduled.status == 201)
        let id = try #require(scheduled.json["id"]?.stringValue)

        first.kill(SIGKILL)
        #expect(await first.waitForExit() != 0)
        let second = try await HeraldProcess(environment: environment)
        base = "http://127.0.0.1:\(try await second.port())"
        let sent = await eventually(attempts: 600) {
            (try? await Self.request(.GET, base + "/notifications/scheduled/\(id)", authorization: bearer).json["status"]) == "sent"
        }
        #expect(sent, "log:\n\(second.log)")
        let shown = try await Self.request(.GET, base + "/notifications/scheduled/\(id)", authorization: bearer).json
        #expect(shown["sent_count"] == .int(1))
        let notificationID = try #require(shown["notification_id"]?.stringValue)
        let status = try await Self.request(.GET, base + "/api/push/notifications/\(notificationID)", authorization: basic)
        #expect(status.status == 200)

        second.kill(SIGTERM)
        #expect(await second.waitForExit() == 0)
    }

    static func request(
        _ method: HTTPMethod, _ url: String, _ body: String? = nil, authorization: String? = nil
    ) async throws -> (status: UInt, json: JSONObject) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json = (try? JSONValue.decode(Data(bytes.readableBytesView)).objectValue ?? [:]) ?? [:]
        return (response.status.code, json)
    }
}
