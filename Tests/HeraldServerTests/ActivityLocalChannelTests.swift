import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// An activity change reaches a device with a WebSocket subscription over it first, in the event shape of Home
/// Assistant's Live Activities there, and goes to APNs when the client does not confirm it (issue 31 §4).
@Suite("PushWard activities: the local channel")
struct ActivityLocalChannelTests {
    @Test func aConfirmedChangeStaysLocalAndAnUnconfirmedOneFallsBackToAPNs() async throws {
        var apns = try await APNsTestServer.start()
        apns.server.configuration.webSocketConfirmTimeout = .seconds(3)  // a confirmation comes in time on a loaded machine
        let server = apns
        try await server.server.run { client in
            let device = try await client.activityDevice()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(device.owner, id: 3)
            let start = try await client.activity(
                .patch, "/activities/wash?upsert=true", #"{"state": "ongoing", "content": {"template": "generic", "state": "Washing"}}"#,
                as: device)
            #expect(start.status == .created)
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["push_type"] == "liveactivity")
            #expect(event["live_activity_token"] == .string(device.pushToStartToken))
            let aps = try #require(event["aps"]?.objectValue)
            #expect(aps["event"] == "start")
            #expect(aps["attributes"] == ["slug": "wash", "name": "wash"])
            #expect(aps["content-state"]?.objectValue?["state"] == "Washing")
            let confirmID = try #require(event["hass_confirm_id"]?.stringValue)
            socket.send(#"{"id": 4, "type": "push_notification_confirm", "confirm_id": "\#(confirmID)"}"#)

            // The update is offered locally too; without a confirmation it goes to APNs, to the update token.
            #expect(try await client.reportUpdateToken(PushWardActivityTests.updateToken, slug: "wash", as: device).status == .noContent)
            let update = try await client.activity(.patch, "/activities/wash", #"{"content": {"state": "Rinsing"}}"#, as: device)
            #expect(update.status == .ok)
            var offeredEvent: JSONObject?
            for _ in 0..<3 where offeredEvent == nil { offeredEvent = await socket.next()?["event"]?.objectValue }  // past the confirm's result
            let offered = try #require(offeredEvent)
            #expect(offered["aps"]?.objectValue?["event"] == "update")
            #expect(await eventually { PushWardActivityTests.activityPushes(server).count == 1 })
            let push = try #require(PushWardActivityTests.activityPushes(server).first)  // the confirmed start never reached APNs
            #expect(push.deviceToken == PushWardActivityTests.updateToken)
            #expect(push.aps?["content-state"]?.objectValue?["state"] == "Rinsing")
            await socket.close()
        }
        try await apns.shutdown()
    }
}
