import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
@testable import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// Home Assistant's Live Activities (`live_activity_token`): what the relay fixtures leave out — timestamps, a dead
/// activity token, the local channel, bad input.
@Suite("Home Assistant Live Activities")
struct HomeAssistantLiveActivityTests {
    static let activityToken = String(repeating: "ab12", count: 16)

    /// A Live Activity call for `userID`.
    static func body(_ userID: String, message: String = "Washing", token: String = activityToken, data: String) -> String {
        #"{"message": "\#(message)", "title": "Laundry", "push_token": "\#(userID)", "live_activity_token": "\#(token)", "registration_info": {"app_id": "io.robbie.HomeAssistant", "os_version": "17.2", "webhook_id": "hook"}, "data": \#(data)}"#
    }

    @Test func updatesInOneSecondGetStrictlyIncreasingTimestamps() async throws {
        // The test clock stands still: every update is in the same second.
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            for progress in 1...3 {
                let response = try await client.post(
                    "/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "update", "progress": \#(progress)}"#))
                #expect(response.status == .created)
            }
            let timestamps = try apns.production.acceptedPushes.map { push in
                try #require(try JSONValue.decode(push.body).objectValue?["aps"]?.objectValue?["timestamp"])
            }
            let now = Int(apns.server.clock.now().timeIntervalSince1970)
            #expect(timestamps == [.int(now), .int(now + 1), .int(now + 2)])
        }
        try await apns.shutdown()
    }

    /// The last timestamp of a token is the store's: one taken by another instance (here a second connection to the
    /// server's SQLite file, a second ahead of this one's clock) is followed, as it is after a restart.
    @Test func theTimestampFollowsTheLastOneTheStoreGaveTheToken() async throws {
        let apns = try await APNsTestServer.start()
        let now = apns.server.clock.now()
        try await apns.server.run { client in
            let registration = try await client.register()
            let other = try apns.server.openStore()
            let taken = try await other.nextLiveActivityTimestamp(token: Self.activityToken, now: now.addingTimeInterval(1))
            try await other.close()
            let response = try await client.post("/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "update"}"#))
            #expect(response.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(try JSONValue.decode(push.body).objectValue?["aps"]?.objectValue?["timestamp"] == .int(taken + 1))
        }
        try await apns.shutdown()
    }

    /// A call that breaks a rule is refused before the store gives its token a timestamp: the next call's push has the
    /// clock's second, not one after a timestamp the refused call took.
    @Test func aCallThatBreaksARuleTakesNoTimestampFromTheStore() async throws {
        let apns = try await APNsTestServer.start()
        let now = Int(apns.server.clock.now().timeIntervalSince1970)
        try await apns.server.run { client in
            let registration = try await client.register()
            let refused = try await client.post(
                "/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "start", "when": 1e300, "when_relative": true}"#))
            #expect(refused.status == .badRequest)
            let response = try await client.post("/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "update"}"#))
            #expect(response.status == .created)
            #expect(apns.production.acceptedPushes.count == 1)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(try JSONValue.decode(push.body).objectValue?["aps"]?.objectValue?["timestamp"] == .int(now), "the refused call took none")
        }
        try await apns.shutdown()
    }

    @Test func startCarriesAttributesAndEndDismisses() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let start = try await client.post(
                "/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "start", "tag": "laundry", "when": 90, "when_relative": true}"#))
            #expect(start.status == .created)
            let end = try await client.post("/api/push/homeassistant", Self.body(registration.userID, message: "clear_notification", data: #"{"event": "end"}"#))
            #expect(end.status == .created)
            let now = Int(apns.server.clock.now().timeIntervalSince1970)
            let pushes = apns.production.acceptedPushes
            #expect(pushes.count == 2)
            let first = try #require(pushes.first)
            let last = try #require(pushes.last)
            let started = try #require(try JSONValue.decode(first.body).objectValue?["aps"]?.objectValue)
            #expect(started["attributes"] == ["tag": "laundry", "title": "Laundry", "started_at": .int(now), "webhook_id": "hook"])
            #expect(started["content-state"] == ["message": "Washing", "title": "Laundry", "countdown_end": .int(now + 90)])
            #expect(pushes.first?.header("apns-collapse-id") == "laundry")
            let ended = try #require(try JSONValue.decode(last.body).objectValue?["aps"]?.objectValue)
            #expect(ended["dismissal-date"] == .int(now))
            #expect(ended["alert"] == ["title": "Laundry", "body": ""])
            #expect(ended["attributes"] == nil)
            #expect(pushes.last?.header("apns-collapse-id") == nil)
        }
        try await apns.shutdown()
    }

    @Test func aSilentUpdateGoesAtPriorityFiveWithATitleOnlyAlert() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.post("/api/push/homeassistant", Self.body(registration.userID, data: #"{"silent": true, "progress": 5}"#))
            #expect(response.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(push.header("apns-priority") == "5")
            let aps = try #require(try JSONValue.decode(push.body).objectValue?["aps"]?.objectValue)
            #expect(aps["event"] == "update")
            #expect(aps["alert"] == ["title": ""])
        }
        try await apns.shutdown()
    }

    @Test func aDeadActivityTokenIs500InvalidTokenAndTheDeviceStaysActive() async throws {
        let apns = try await APNsTestServer.start()
        apns.production.markUnregistered(Self.activityToken)
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.post("/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "update"}"#))
            #expect(response.status == .internalServerError)
            #expect(try response.json()["errorType"] == "InvalidToken")
            // The device's own token still works.
            let alert = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(alert.status == .created)
            #expect(apns.production.acceptedPushes.last?.deviceToken == Fixtures.apnsToken())
        }
        try await apns.shutdown()
    }

    @Test func badLiveActivityInputIsRefusedNamingTheField() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let cases = [
                ("live_activity_token", Self.body(registration.userID, token: "not-a-token", data: "{}")),
                ("data.event", Self.body(registration.userID, data: #"{"event": "pause"}"#)),
                ("data.tag", Self.body(registration.userID, data: #"{"event": "start", "tag": "\#(String(repeating: "t", count: 65))"}"#)),
            ]
            for (field, body) in cases {
                let response = try await client.post("/api/push/homeassistant", body)
                #expect(response.status == .badRequest, "\(field)")
                #expect(try response.json()["field"]?.stringValue == field)
            }
            #expect(apns.production.requests.isEmpty)
        }
        try await apns.shutdown()
    }

    @Test func theLocalChannelCarriesEverythingTheAPNsPushWould() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, id: 3)
            async let answer = client.post(
                "/api/push/homeassistant", Self.body(registration.userID, data: #"{"event": "start", "tag": "laundry", "progress": 10}"#))
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["push_type"] == "liveactivity")
            #expect(event["live_activity_token"] == .string(Self.activityToken))
            let aps = try #require(event["aps"]?.objectValue)
            #expect(aps["event"] == "start")
            #expect(aps["attributes-type"] == "HALiveActivityAttributes")
            #expect(aps["attributes"]?.objectValue?["tag"] == "laundry")
            #expect(aps["content-state"]?.objectValue?["progress"] == 10)
            #expect(aps["timestamp"] != nil)
            #expect(event["title"] == "Laundry")
            let confirmID = try #require(event["hass_confirm_id"]?.stringValue)
            socket.send(#"{"id": 4, "type": "push_notification_confirm", "confirm_id": "\#(confirmID)"}"#)
            #expect(try await answer.status == .created)
            await socket.close()
        }
        #expect(apns.production.requests.isEmpty)
        try await apns.shutdown()
    }
}
