import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// ntfy's scheduled delivery (`X-Delay`, `At`, `In`, JSON `delay`): the rule of ``NtfyDelay`` with boundary values, and
/// over real HTTP with a test clock, a delayed message that reaches the APNs double only when it is due.
@Suite("ntfy delayed messages")
struct NtfyDelayTests {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    static func code(_ raw: String) -> Int? {
        do {
            _ = try NtfyDelay.sendAt(raw, now: now)
            return nil
        } catch let error as APIError {
            guard case .int(let code)? = error.extra["ntfy_code"] else { return -1 }
            #expect(error.field == "delay" && error.status == .badRequest)
            return code
        } catch {
            return -1
        }
    }

    @Test func durationsAndTimestampsAsNtfyReadsThem() throws {
        let cases: [(String, TimeInterval)] = [
            ("30m", 1_800), ("30min", 1_800), ("30 minutes", 1_800), ("2 hours", 7_200), ("3h", 10_800), ("1 day", 86_400),
            ("3 days", 259_200), ("10s", 10), ("10 seconds", 10), (" 45 SECS ", 45), ("1780003600", 3_600),
        ]
        for (raw, ahead) in cases {
            #expect(try NtfyDelay.sendAt(raw, now: Self.now) == Self.now.addingTimeInterval(ahead), "\(raw)")
        }
    }

    @Test func boundariesAndUnreadableValuesAreRefusedWithNtfysCodes() {
        #expect(Self.code("9s") == 40005)
        #expect(Self.code("0m") == 40005)
        #expect(Self.code("1780000009") == 40005)  // a timestamp 9 s ahead
        #expect(Self.code("1779999999") == 40005)  // in the past
        #expect(Self.code("259201s") == 40006)  // 3 days and a second
        #expect(Self.code("4 days") == 40006)
        #expect(Self.code("999999 days") == 40006)  // the largest duration read: no overflow
        #expect(Self.code("999999999999") == 40006)  // the largest timestamp read
        for unreadable in [
            "10am", "tomorrow, 3pm", "", "m", "-5m", "1.5h", "1234567m", "9999999999999", "99999999999999999999999 days", "30 fortnights",
            "３０m", "30m30s",
        ] {
            #expect(Self.code(unreadable) == 40004, "\(unreadable)")
        }
    }

    @Test func aDelayedMessageReachesThePhoneWhenItIsDue() async throws {
        var apns = try await APNsTestServer.start(clock: TestClock(Self.now))
        apns.server.configuration.scheduledSendPollInterval = .milliseconds(20)
        let clock = apns.server.clock
        let production = apns.production
        try await apns.server.run { client in
            let topic = try await client.register(token: Fixtures.apnsToken(0x71)).userID
            // curl -H "In: 30min" -d "It's 30 minutes later now" ntfy.sh/reminder
            let response = try await client.ntfy("/\(topic)", body: "It's 30 minutes later now", headers: ["In": "30min", "Tags": "alarm_clock"])
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["event"] == "message" && json["message"] == "It's 30 minutes later now")
            #expect(json["time"] == .int(1_780_001_800))
            let scheduledID = try #require(response.headers[HTTPField.Name("X-Herald-Scheduled")!])
            #expect(json["id"] == .string(scheduledID))
            // The JSON form (aiontfy's): a delay in a second message.
            let second = try await client.post("/", #"{"topic": "\#(topic)", "message": "Tea is ready", "delay": "1h"}"#)
            #expect(second.status == .ok)
            #expect(try second.json()["time"] == .int(1_780_003_600))

            try await Task.sleep(for: .milliseconds(200))
            #expect(production.acceptedPushes.isEmpty)
            clock.advance(by: 1_800)
            #expect(await eventually { production.acceptedPushes.count == 1 })
            let firstPush = try #require(production.acceptedPushes.first)
            let first = try #require(try JSONValue.decode(firstPush.body).objectValue)
            #expect(first.aps["alert"] == ["body": "⏰ It's 30 minutes later now"])
            clock.advance(by: 1_800)
            #expect(await eventually { production.acceptedPushes.count == 2 })
            let laterPush = try #require(production.acceptedPushes.last)
            let later = try #require(try JSONValue.decode(laterPush.body).objectValue)
            #expect(later.aps["alert"] == ["body": "Tea is ready"])
        }
    }

    @Test func refusalsInNtfysShape() async throws {
        try await TestServer().run { client in
            let device = try await client.register()
            func expectRefused(_ response: TestResponse, status: Int, code: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
                #expect(response.status.code == status, sourceLocation: sourceLocation)
                let json = try response.json()
                #expect(Set(json.keys) == ["code", "http", "error", "link"], sourceLocation: sourceLocation)
                #expect(json["code"] == .int(code) && json["http"] == .int(status), "\(json)", sourceLocation: sourceLocation)
            }
            for header in ["X-Delay", "Delay", "X-At", "At", "X-In", "In"] {
                try expectRefused(try await client.ntfy("/\(device.userID)", body: "x", headers: [header: "tomorrow, 10am"]), status: 400, code: 40004)
            }
            try expectRefused(try await client.ntfy("/\(device.userID)", body: "x", headers: ["Delay": "5s"]), status: 400, code: 40005)
            try expectRefused(
                try await client.post("/", #"{"topic": "\#(device.userID)", "message": "x", "delay": "4d"}"#), status: 400, code: 40006)
            try expectRefused(try await client.post("/", #"{"topic": "\#(device.userID)", "delay": 30}"#), status: 400, code: 40004)
            // A topic id: one device per scheduled send, so a delay is refused there.
            let topic = try await client.createTopic(by: device)
            try expectRefused(try await client.ntfy("/\(topic.topicID)", body: "x", headers: ["In": "1h"]), status: 400, code: 40004)
            // At most 25 pending per device, as for POST /notifications/scheduled.
            for index in 0..<25 {
                let response = try await client.ntfy("/\(device.userID)", body: "reminder \(index)", headers: ["In": "\(index + 1)h"])
                #expect(response.status == .ok)
            }
            try expectRefused(try await client.ntfy("/\(device.userID)", body: "one more", headers: ["In": "2d"]), status: 409, code: 40900)
        }
    }
}
