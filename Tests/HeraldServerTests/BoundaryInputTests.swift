import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Numbers a client sends that Herald once converted or added without a range check, each of which ended the process
/// (a Swift trap answers nothing and ends every connection and delivery): now the dialect's 400 naming the member,
/// nothing stored, and the server still answers.
@Suite("Boundary input: no number traps")
struct BoundaryInputTests {
    static let noon = Date(timeIntervalSince1970: 1_763_812_800)  // 2025-11-22T12:00:00Z

    /// `data.push.sound.critical` becomes a whole number (the relay's `parseInt`): `Int(1e300)` trapped.
    @Test(arguments: ["1e300", "-1e300", "9.3e18", "-9.3e18", #""1e300""#, #""-9.3e18""#, "9223372036854775807.5"])
    func aCriticalSoundsOutOfRangeNumberIsA400(critical: String) async throws {
        try await TestServer(clock: TestClock(Self.noon)).run { client in
            let registration = try await client.register()
            let data = #"{"push": {"sound": {"name": "alarm.caf", "critical": \#(critical), "volume": 1.0}}}"#
            let refused = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: data))
            try Self.expectHomeAssistant400(refused, field: "data.push.sound.critical")
            try await Self.expectNothingStoredAndStillServing(client, registration)
        }
    }

    /// Whole numbers that fit stay what they were: the relay's `parseInt` of a string, an integral double.
    @Test func aCriticalSoundsNumberInRangeIsStillTaken() async throws {
        try await TestServer(clock: TestClock(Self.noon)).run { client in
            let registration = try await client.register()
            for critical in ["1", #""1""#, "1.9", "9223372036854775807", #""-9223372036854775808""#] {
                let data = #"{"push": {"sound": {"name": "alarm.caf", "critical": \#(critical), "volume": 1.0}}}"#
                let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: data))
                #expect(response.status == .created, "critical \(critical)")
            }
        }
    }

    /// A Live Activity's `when` with `when_relative` is added to now: `now + Int(1e300)` trapped, and so did an
    /// offset near `Int.max` (the conversion of 2^63, or the sum). The end must be a date from 1970 to the year 9999.
    @Test(arguments: [
        "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "9000000000000000000", "-9000000000000000000",
        "253402300799", "-1763812801",
    ])
    func aRelativeLiveActivityEndOutOfRangeIsA400(when: String) async throws {
        try await TestServer(clock: TestClock(Self.noon)).run { client in
            let registration = try await client.register()
            let body = HomeAssistantLiveActivityTests.body(
                registration.userID, data: #"{"event": "update", "when": \#(when), "when_relative": true}"#)
            let refused = try await client.post("/api/push/homeassistant", body)
            try Self.expectHomeAssistant400(refused, field: "data.when")
            try await Self.expectNothingStoredAndStillServing(client, registration)
        }
    }

    @Test func aRelativeLiveActivityEndInRangeIsStillTaken() async throws {
        let apns = try await APNsTestServer.start(clock: TestClock(Self.noon))
        try await apns.server.run { client in
            let registration = try await client.register()
            let now = Int(Self.noon.timeIntervalSince1970)
            for (when, end) in [("90", now + 90), ("-60.5", now - 61), ("0", now)] {
                let body = HomeAssistantLiveActivityTests.body(
                    registration.userID, data: #"{"event": "update", "when": \#(when), "when_relative": true}"#)
                let response = try await client.post("/api/push/homeassistant", body)
                #expect(response.status == .created, "when \(when)")
                let state = apns.production.acceptedPushes.last?.aps?["content-state"]?.objectValue
                #expect(state?["countdown_end"] == .int(end), "when \(when)")
            }
        }
        try await apns.shutdown()
    }

    /// Home Assistant's 400: `message` for Home Assistant, `field` naming the member.
    static func expectHomeAssistant400(_ response: TestResponse, field: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == .badRequest, sourceLocation: sourceLocation)
        let json = try response.json(sourceLocation: sourceLocation)
        #expect(json["field"] == .string(field), sourceLocation: sourceLocation)
        #expect(json["message"]?.stringValue?.contains(field) == true, sourceLocation: sourceLocation)
    }

    /// The device has no notification (the refusal stored nothing), and the server answers the next request.
    static func expectNothingStoredAndStillServing(
        _ client: any TestClientProtocol, _ registration: Registration, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let recent = try await client.execute(uri: "/api/push/notifications", method: .get, headers: registration.basic)
        #expect(recent.status == .ok, sourceLocation: sourceLocation)
        #expect(try recent.json(sourceLocation: sourceLocation)["notifications"] == .array([]), sourceLocation: sourceLocation)
        let health = try await client.execute(uri: "/healthz", method: .get)
        #expect(health.status == .ok, sourceLocation: sourceLocation)
    }
}
