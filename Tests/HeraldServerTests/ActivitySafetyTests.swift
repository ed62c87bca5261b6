import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 37 over real HTTP: numbers that used to trap the process (a `duration` of `Int.max`, a duration text with a
/// huge day count, dates near `Int.max`, a gauge whose `progress` is not finite) are refused with PushWard's 422 naming
/// the member, nothing is stored, and the server goes on answering.
@Suite("PushWard activities: no input traps, nothing half-stored")
struct ActivitySafetyTests {
    /// The `location` of the first entry of a problem's `errors`.
    static func location(_ response: TestResponse) -> String? {
        response.jsonObject?["errors"]?.arrayValue?.first?.objectValue?["location"]?.stringValue
    }

    /// The store's id of the device.
    static func deviceID(_ device: ActivityDevice, in store: some DeviceStore) async throws -> Device.ID {
        try #require(try await store.device(userIDHash: Secrets.hash(device.owner.userID.lowercased()))).id
    }

    /// PATCHes `content` (JSON text) onto a new activity `slug` with `?upsert=true`, expecting 422 at `member`, and
    /// checks that nothing was stored and that the server still answers.
    static func expectRefused(
        _ content: String, at member: String, slug: String = "timer", client: some TestClientProtocol, device: ActivityDevice,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let answer = try await client.activity(.patch, "/activities/\(slug)?upsert=true", #"{"content": \#(content)}"#, as: device)
        #expect(answer.status == .unprocessableContent, "\(content)", sourceLocation: sourceLocation)
        #expect(answer.jsonObject?["code"] == "activity.content_invalid", sourceLocation: sourceLocation)
        #expect(location(answer) == member, "\(content)", sourceLocation: sourceLocation)
        #expect(try await client.activity(.get, "/activities/\(slug)", as: device).status == .notFound, sourceLocation: sourceLocation)
    }

    @Test func durationsThatOverflowAreRefusedNamingTheMember() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let member = "body.content.duration"
            for duration in [
                "9223372036854775807", "157788001", #""99999999999999999999d""#, #""106751991167300d""#,
                #""9223372036854775807s9223372036854775807s""#, #""1000000000d1000000000d""#, #""157788001""#, "1e300",
            ] {
                try await Self.expectRefused(#"{"template": "countdown", "duration": \#(duration)}"#, at: member, client: client, device: device)
            }
            // At the bound it is accepted, and end_date is now + duration.
            let accepted = try await client.activity(
                .patch, "/activities/timer?upsert=true", #"{"content": {"template": "countdown", "duration": 157788000}}"#, as: device)
            #expect(accepted.status == .created)
            let content = accepted.jsonObject?["content"]?.objectValue
            let startDate = try #require(content?["start_date"]?.doubleValue)
            #expect(content?["end_date"]?.doubleValue == startDate + 157_788_000)
            #expect(try await client.activity(.get, "/activities", as: device).status == .ok)  // still answering
        }
        try await apns.shutdown()
    }

    @Test func datesPastYear9999AndOtherUnboundedIntegersAreRefused() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let cases: [(String, String)] = [
                (#"{"template": "countdown", "end_date": 9223372036854775807}"#, "body.content.end_date"),
                (#"{"template": "countdown", "end_date": 253402300800}"#, "body.content.end_date"),
                (#"{"template": "countdown", "start_date": 1, "end_date": 9223372036854775806}"#, "body.content.end_date"),
                (#"{"template": "countdown", "end_date": 2000000000, "warning_threshold": 9223372036854775807}"#, "body.content.warning_threshold"),
                (#"{"template": "alert", "severity": "info", "fired_at": -9223372036854775808}"#, "body.content.fired_at"),
                (#"{"template": "log", "lines": [{"text": "x", "at": 9223372036854775807}]}"#, "body.content.lines[0].at"),
                (#"{"template": "generic", "remaining_time": 9223372036854775807}"#, "body.content.remaining_time"),
            ]
            for (content, member) in cases { try await Self.expectRefused(content, at: member, client: client, device: device) }
        }
        try await apns.shutdown()
    }

    @Test func aGaugeWhoseProgressIsNotFiniteIsRefusedAndNothingIsStored() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            try await Self.expectRefused(
                #"{"template": "gauge", "value": 0, "min_value": -1e308, "max_value": 1e308}"#, at: "body.content.max_value", slug: "tank",
                client: client, device: device)
            try await Self.expectRefused(
                #"{"template": "gauge", "value": 1e308, "min_value": -1e308, "max_value": 1e308}"#, at: "body.content.max_value", slug: "tank",
                client: client, device: device)
            let list = try await client.activity(.get, "/activities", as: device)
            #expect(list.jsonObject?["items"]?.arrayValue?.isEmpty == true)
            // Nothing in the store either, so nothing for the dispatcher to retry.
            let store = try apns.server.openStore()
            #expect(try await store.activities(deviceID: try await Self.deviceID(device, in: store)).isEmpty)
            try await store.close()
            let fine = try await client.activity(
                .patch, "/activities/tank?upsert=true", #"{"content": {"template": "gauge", "value": 5, "min_value": 0, "max_value": 10}}"#,
                as: device)
            #expect(fine.status == .created)
            #expect(fine.jsonObject?["content"]?.objectValue?["progress"]?.doubleValue == 0.5)
        }
        try await apns.shutdown()
    }

    @Test func aSnoozePastYear9999IsRefusedAndTheCountdownIsUnchanged() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let latest = 253_402_300_799
            let started = try await client.activity(
                .patch, "/activities/oven?upsert=true", #"{"state": "ongoing", "content": {"template": "countdown", "end_date": \#(latest)}}"#,
                as: device)
            #expect(started.status == .created)
            let snoozed = try await client.activity(.post, "/activities/oven/snooze", #"{"seconds": 300}"#, as: device)
            #expect(snoozed.status == .unprocessableContent)
            #expect(Self.location(snoozed) == "body.seconds")
            let after = try await client.activity(.get, "/activities/oven", as: device)
            #expect(after.jsonObject?["content"]?.objectValue?["end_date"]?.doubleValue == Double(latest))
            #expect(after.jsonObject?["content"]?.objectValue?["snoozed_until"] == nil)
        }
        try await apns.shutdown()
    }
}
