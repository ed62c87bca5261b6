import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// A notification is stored with its provider-neutral content, so that it is rendered for whatever its device is
/// when it goes out: a device that registered again on another platform, and the WebSocket channel.
@Suite("Rendering from content")
struct ContentRenderingTests {
    @Test func aDeviceThatMovedToFCMGetsItsPendingNotificationAsAnFCMMessage() async throws {
        let fcm = try await FCMTestServer.start()  // APNs is not configured: an APNs device's notifications wait.
        try await fcm.server.run { client in
            let registration = try await client.register()
            let apiToken = try await client.createToken(for: registration)
            let sent = try await client.sendAction(
                apiToken.bearer, body: #"{"title": "Door", "body": "Opened", "level": "passive", "source": "doors"}"#)
            #expect(sent.status == .created)
            #expect(try sent.json()["status"] == "queued")

            let token = Fixtures.fcmToken(7)
            let moved = try await client.post(
                "/api/push/register", #"{"platform": "fcm", "token": "\#(token)"}"#, headers: registration.basic)
            #expect(moved.status == .ok)

            // The test clock moves a second per look: an attempt that a loaded machine made fail (an access token not
            // fetched in time) is retried after its back-off, which a clock that stands still never reaches.
            let clock = fcm.server.clock
            let double = fcm.fcm
            #expect(await eventually(attempts: 1_200) {
                clock.advance(by: 1)
                return double.acceptedMessages.contains { $0.token == token }
            })
            let message = try #require(await fcm.acceptedMessage(to: token))
            #expect(message.message["notification"] == ["title": "Door", "body": "Opened"])
            let android = try #require(message.message["android"]?.objectValue)
            #expect(android["priority"] == "NORMAL")
            #expect(android["notification"]?.objectValue?["channel_id"] == "doors")
            #expect(message.message["aps"] == nil)
            #expect(message.message["data"]?.objectValue?["source"] == "doors")
        }
        try await fcm.shutdown()
    }

    @Test func theWebSocketEventCarriesTheWholeBodyWhereAPNsGetsItShortened() async throws {
        let server = try TestServer()
        try await server.run { client in
            let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
            let registration = Registration(
                userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, confirm: false)

            // 4,400 bytes: over APNs' 4 KB (the event, with the body three times, stays under the test client's 16 KB frames).
            let body = String(repeating: "🐦", count: 1_100)
            let response = try await client.notify(registration.userID, title: "Birds", body: body)
            #expect(response.status == .created)
            #expect(try response.json()["truncated"] == true)  // the stored APNs payload is shortened…
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["body"] == .string(body))  // …the channel has no such limit
            #expect(event["aps"]?.objectValue?["alert"]?.objectValue?["body"] == .string(body))
            #expect(event["title"] == "Birds")
            await socket.close()
        }
    }
}
