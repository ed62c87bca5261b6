import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Home Assistant's relay's own fixtures (Fixtures/mobile-apps-fcm-push, copied unchanged; SOURCE.md says from
/// which commit): each `input` goes through `POST /api/push/homeassistant` and what reaches the APNs double must be
/// what the relay sends APNs for it, with the daily limit counted exactly when the relay counts it.
@Suite("Home Assistant relay fixtures, at the APNs double")
struct HomeAssistantRelayFixtureTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/mobile-apps-fcm-push")

    /// The fixtures of one folder, by file name.
    static func fixtures(_ kind: String) throws -> [(name: String, json: JSONObject)] {
        let directory = folder.appendingPathComponent(kind)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            (name, try #require(try JSONValue.decode(Data(contentsOf: directory.appendingPathComponent(name))).objectValue))
        }
    }

    /// `input` with the fixture's FCM token replaced by a USER_ID, as a request body.
    static func body(_ input: JSONObject, userID: String) throws -> String {
        var input = input
        input["push_token"] = .string(userID)
        return String(decoding: try JSONValue.object(input).encoded(), as: UTF8.self)
    }

    @Test func everyLegacyFixtureReachesAPNsAsTheRelaySendsIt() async throws {
        let fixtures = try Self.fixtures("legacy")
        #expect(fixtures.count == 50)
        let apns = try await APNsTestServer.start(dailyLimit: 500)
        try await apns.server.run { client in
            let registration = try await client.register()
            var successful = 0
            for (name, fixture) in fixtures {
                let input = try #require(fixture["input"]?.objectValue, "\(name)")
                let response = try await client.post("/api/push/homeassistant", try Self.body(input, userID: registration.userID))
                #expect(response.status == .created, "\(name): \(String(buffer: response.body))")
                guard response.status == .created, let push = apns.production.acceptedPushes.last else { continue }

                let headers = try #require(fixture["headers"]?.objectValue, "\(name)")
                #expect(push.header("apns-push-type") == headers["apns-push-type"]?.stringValue, "\(name)")
                #expect(push.header("apns-collapse-id") == headers["apns-collapse-id"]?.stringValue, "\(name)")
                #expect(push.header("apns-topic") == APNsTestServer.topic, "\(name)")
                let sent = try JSONValue.decode(push.body)
                let expected = RelayPayload.onTheWire(try #require(fixture["payload"], "\(name)"))
                // The relay sends a command's badge with it (Apple delivers both); nothing else may look wrong to APNs.
                let tolerated = expected.objectValue?["aps"]?.objectValue?["badge"] != nil ? ["background push with alert, badge or sound"] : []
                #expect(push.warnings.allSatisfy(tolerated.contains), "\(name): \(push.warnings)")
                #expect(RelayPayload.same(sent, expected), "\(name): sent \(sent), the relay sends \(expected)")

                let counts = fixture["rate_limit"] == .bool(true)
                if counts { successful += 1 }
                #expect(try response.json()["rateLimits"]?.objectValue?["successful"] == .int(successful), "\(name): rate_limit \(counts)")
            }
            #expect(apns.production.acceptedPushes.count == fixtures.count)
        }
        try await apns.shutdown()
    }

    @Test func everyLiveActivityFixtureIsALiveActivityPushToItsToken() async throws {
        let fixtures = try Self.fixtures("live-activity")
        #expect(fixtures.count == 4)
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            var successful = 0
            for (name, fixture) in fixtures {
                let input = try #require(fixture["input"]?.objectValue, "\(name)")
                let expected = try #require(fixture["expected"]?.objectValue, "\(name)")
                let response = try await client.post("/api/push/homeassistant", try Self.body(input, userID: registration.userID))
                #expect(response.status == .created, "\(name)")
                guard response.status == .created, let push = apns.production.acceptedPushes.last else { continue }

                let token = try #require(expected["liveActivityToken"]?.stringValue)
                #expect(push.deviceToken == token, "\(name): sent to the activity's token, not the device's")
                #expect(push.header("apns-push-type") == "liveactivity", "\(name)")
                #expect(push.header("apns-topic") == APNsTestServer.topic + ".push-type.liveactivity", "\(name)")
                let data = input["data"]?.objectValue ?? [:]
                let silent = data["silent"] == .bool(true) && (data["event"]?.stringValue ?? "update") == "update"
                #expect(push.header("apns-priority") == (silent ? "5" : "10"), "\(name)")
                #expect(push.header("apns-collapse-id") == (data["event"] == "start" ? data["tag"]?.stringValue : nil), "\(name)")
                #expect(push.warnings.isEmpty, "\(name): \(push.warnings)")

                let aps = try #require(try JSONValue.decode(push.body).objectValue?["aps"]?.objectValue, "\(name)")
                #expect(aps["event"] == expected["apsEvent"], "\(name)")
                if case .int = aps["timestamp"] {} else { Issue.record("\(name): timestamp is not an integer: \(String(describing: aps["timestamp"]))") }
                let checks: [(expected: String, sent: String)] = [
                    ("contentState", "content-state"), ("attributesType", "attributes-type"), ("attributes", "attributes"),
                    ("dismissalDate", "dismissal-date"), ("staleDate", "stale-date"), ("relevanceScore", "relevance-score"),
                    ("alert", "alert"), ("interruptionLevel", "interruption-level"), ("alertSound", "sound"),
                ]
                for check in checks {
                    guard let want = expected[check.expected] else { continue }
                    #expect(RelayPayload.matches(aps[check.sent], want), "\(name): aps.\(check.sent) is \(String(describing: aps[check.sent])), want \(want)")
                }
                if expected["updateRateLimits"] == .bool(true) { successful += 1 }
                #expect(try response.json()["rateLimits"]?.objectValue?["successful"] == .int(successful), "\(name)")
            }
            #expect(!apns.production.requests.contains { $0.deviceToken == Fixtures.apnsToken() }, "nothing went to the device's own token")
        }
        try await apns.shutdown()
    }
}

/// Comparing what Herald sent with what the relay's fixture says.
enum RelayPayload {
    /// The fixture's payload as firebase-admin hands it to APNs (`validateAps` and `validateApsSound` in its
    /// `messaging-internal.ts`): `mutableContent: true` is `mutable-content: 1`, `contentAvailable: true` is
    /// `content-available: 1`, and a sound's `critical` stays only as `1` (`true` becomes `1`, anything else goes).
    static func onTheWire(_ payload: JSONValue) -> JSONValue {
        guard case .object(var object) = payload, case .object(var aps)? = object["aps"] else { return payload }
        for (camel, wire) in [("mutableContent", "mutable-content"), ("contentAvailable", "content-available")] {
            if let flag = aps.removeValue(forKey: camel), flag == .bool(true) { aps[wire] = 1 }
        }
        if case .object(var sound)? = aps["sound"], let critical = sound["critical"] {
            sound["critical"] = critical == .int(1) || critical == .bool(true) ? 1 : nil
            aps["sound"] = .object(sound)
        }
        object["aps"] = .object(aps)
        return .object(object)
    }

    /// Equal JSON, numbers compared by value (`1` and `1.0` are the same number in JSON).
    static func same(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        switch (left, right) {
        case (.object(let a)?, .object(let b)?): a.count == b.count && a.allSatisfy { same($0.value, b[$0.key]) }
        case (.array(let a)?, .array(let b)?): a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (let a?, let b?) where a.doubleValue != nil && b.doubleValue != nil: a.doubleValue == b.doubleValue
        default: left == right
        }
    }

    /// Jest's `toMatchObject`: every member `expected` names is there with that value (objects recursively).
    static func matches(_ sent: JSONValue?, _ expected: JSONValue) -> Bool {
        guard case .object(let want) = expected else { return same(sent, expected) }
        guard case .object(let have)? = sent else { return false }
        return want.allSatisfy { matches(have[$0.key], $0.value) }
    }
}
