import Foundation
import HTTPTypes
import HeraldCore
@testable import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@Suite("WebSocket channel")
struct WebSocketTests {
    @Test func aConfirmedNotificationIsDeliveredLocallyAndNeverSentToAPNs() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, id: 7)

            async let answer = client.post("/api/push/notify", SeedExamples.filled(SeedExamples.frigateEvent, registration.userID))
            let message = try #require(await socket.next())
            #expect(message["id"] == 7)
            #expect(message["type"] == "event")
            let event = try #require(message["event"]?.objectValue)
            #expect(event["title"] == "Person detected")
            #expect(event["body"] == "Front Door")
            #expect(event["snapshot"] == ["type": "frigate_event", "id": "1739987.123-abcdef"])
            #expect(event["aps"]?.objectValue?["mutable-content"] == 1)
            let confirmID = try #require(event["hass_confirm_id"]?.stringValue)
            socket.send(#"{"id": 8, "type": "push_notification_confirm", "confirm_id": "\#(confirmID)"}"#)
            #expect(await socket.next() == ["id": 8, "type": "result", "success": true])

            let response = try await answer
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered")
            #expect(event["id"] == json["id"])
            await socket.close()
        }
        #expect(apns.production.requests.isEmpty)
        try await apns.shutdown()
    }

    @Test func withoutAConfirmationItFallsBackToAPNsExactlyOnce() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.webSocketConfirmTimeout = .seconds(1)
        started.server.configuration.deliveryWait = .milliseconds(100)
        let apns = started
        try await apns.server.run { client in
            let registration = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration)
            let response = try await client.notify(registration.userID)
            #expect(try response.json()["status"] == "queued")
            let id = try #require(try response.json()["id"]?.stringValue)
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["hass_confirm_id"] != nil)
            #expect(await apns.acceptedPush(id: id) != nil)
            // Delivered is final: once the store says so, nothing more goes to APNs.
            #expect(try await eventually {
                try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()["status"] == "delivered"
            })
            #expect(apns.production.acceptedPushes.count == 1)
            // A late confirmation finds nothing waiting.
            socket.send(#"{"id": 2, "type": "push_notification_confirm", "confirm_id": "\#(event["hass_confirm_id"]?.stringValue ?? "")"}"#)
            #expect(await socket.next()?["error"]?.objectValue?["code"] == "not_found")
            await socket.close()
        }
        try await apns.shutdown()
    }

    @Test func twoSocketsForOneDeviceAndOneConfirms() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let phone = WebSocketTestClient(port: try #require(client.port))
            let desktop = WebSocketTestClient(port: try #require(client.port))
            await phone.subscribe(registration, id: 1)
            await desktop.subscribe(registration, id: 5)
            async let answer = client.notify(registration.userID)
            let onPhone = try #require(await phone.next()?["event"]?.objectValue)
            let onDesktop = try #require(await desktop.next()?["event"]?.objectValue)
            #expect(onPhone["id"] == onDesktop["id"])
            desktop.send(#"{"id": 6, "type": "push_notification_confirm", "confirm_id": "\#(onDesktop["hass_confirm_id"]?.stringValue ?? "")"}"#)
            #expect(await desktop.next()?["success"] == true)
            #expect(try await answer.json()["status"] == "delivered")
            await phone.close()
            await desktop.close()
        }
        #expect(apns.production.requests.isEmpty)
        try await apns.shutdown()
    }

    @Test func aClientThatDoesNotConfirmCountsAsDeliveredWhenSentAndShutdownClosesSockets() async throws {
        let apns = try await APNsTestServer.start()
        let socket = try await apns.server.run { client in
            let registration = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, confirm: false)
            let response = try await client.notify(registration.userID)
            #expect(try response.json()["status"] == "delivered")
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["hass_confirm_id"] == nil)
            return socket
        }
        // The server shut down gracefully and closed the socket it still had open.
        #expect(await socket.isClosed())
        #expect(apns.production.requests.isEmpty)
        try await apns.shutdown()
    }

    @Test func aWebSocketOnlyDeviceGetsWhatWasQueuedWhenItSubscribes() async throws {
        let server = try TestServer()
        try await server.run { client in
            let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
            let registration = Registration(
                userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
            var ids: [String] = []
            for title in ["first", "second"] {
                let response = try await client.notify(registration.userID, title: title)
                let json = try response.json()
                #expect(json["status"] == "queued")
                #expect(json["warning"]?.stringValue?.contains("No WebSocket client") == true)
                ids.append(json["id"]?.stringValue ?? "")
            }
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration)
            // The events and the answers to their confirmations interleave: a notification claimed while an earlier
            // attempt still held it goes out once that attempt ends, which can be after the first confirmation's
            // answer (SlotPool.takeCustody).
            var received: [String] = []
            var answered = 0
            while received.count < 2 || answered < 2 {
                guard let message = await socket.next() else {
                    let metrics = String(decoding: try await client.execute(uri: "/metrics", method: .get).body.readableBytesView, as: UTF8.self)
                    let load = metrics.split(separator: "\n").filter { $0.hasPrefix("herald_delivery") || $0.hasPrefix("herald_websocket_conn") }
                    Issue.record(
                        "\(received.count) events, \(answered) answers, socket \(socket.isClosedNow ? "closed" : "open"); the store: \(try await server.outbox(of: ids)); \(load)")
                    return
                }
                if let event = message["event"]?.objectValue {
                    received.append(event["id"]?.stringValue ?? "?")
                    socket.send(#"{"id": 9, "type": "push_notification_confirm", "confirm_id": "\#(event["hass_confirm_id"]?.stringValue ?? "")"}"#)
                } else {
                    #expect(message == ["id": 9, "type": "result", "success": true])
                    answered += 1
                }
            }
            #expect(Set(received) == Set(ids))
            for id in ids {
                var status: JSONValue?
                for _ in 0..<200 where status != "delivered" {
                    status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()["status"]
                    if status != "delivered" { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(status == "delivered")
            }
            // And live ones now arrive at once.
            let live = try await client.notify(registration.userID, title: "live")
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["title"] == "live")
            socket.send(#"{"id": 10, "type": "push_notification_confirm", "confirm_id": "\#(event["hass_confirm_id"]?.stringValue ?? "")"}"#)
            #expect(live.status == .created)
            await socket.close()
        }
    }

    @Test func aClientThatStopsAnsweringPingsIsDropped() async throws {
        var server = try TestServer()
        // Two unanswered pings drop the peer: at 5 s apart, the first send below still finds it subscribed when the
        // whole suite loads this machine (at 1 s, and once at 2 s, apart it did not).
        server.configuration.webSocketPingInterval = .seconds(5)
        // The first send's answer says "delivered" once the event is written to the socket: wait for that.
        server.configuration.deliveryWait = APNsTestServer.outcomeWait
        try await server.run { client in
            let (peer, userID) = try await SilentWebSocketPeer.subscribedToNewDevice(on: client)
            // Subscribed: a notification is handed to the socket (no confirmation asked, so it counts as delivered).
            #expect(try await client.notify(userID).json()["status"] == "delivered")

            // The peer never answers pings: within two ping intervals the server drops it, and notifications wait again.
            var status: JSONValue?
            for _ in 0..<300 where status != "queued" {
                try await Task.sleep(for: .milliseconds(100))
                status = try await client.notify(userID).json()["status"]
            }
            #expect(status == "queued")
            _ = peer
        }
    }

    @Test func badMessagesAreAnsweredWithErrorsAndAWrongSecretClosesTheSocket() async throws {
        var server = try TestServer()
        server.configuration.webSocketSubscribeTimeout = .seconds(3_600)  // seven refusals come before it subscribes
        try await server.run { client in
            let registration = try await client.register()
            let port = try #require(client.port)
            let socket = WebSocketTestClient(port: port)
            for (message, code) in [
                ("not json", "invalid_format"),
                (#"{"id": 1, "type": "push_notification_channel"}"#, "invalid_format"),
                (#"{"id": "x", "type": "push_notification_channel", "user_id": "a", "device_secret": "b"}"#, "invalid_format"),
                (#"{"id": 2, "type": "push_notification_channel", "user_id": "abc", "device_secret": "b"}"#, "invalid_field"),
                (#"{"id": 3, "type": "push_notification_channel", "user_id": "\#(Secrets.random256BitHex())", "device_secret": "b"}"#, "unknown_user"),
                (#"{"id": 4, "type": "launch_rockets"}"#, "unknown_command"),
                (#"{"id": 5, "type": "push_notification_confirm", "confirm_id": "x"}"#, "not_subscribed"),
            ] {
                socket.send(message)
                let answer = await socket.next()
                #expect(answer?["success"] == false, "\(message)")
                #expect(answer?["error"]?.objectValue?["code"] == .string(code), "\(message)")
            }
            await socket.subscribe(registration, id: 6)
            socket.send(#"{"id": 7, "type": "push_notification_confirm"}"#)
            #expect(await socket.next()?["error"]?.objectValue?["code"] == "invalid_format")

            let intruder = WebSocketTestClient(port: port)
            intruder.send(#"{"id": 1, "type": "push_notification_channel", "user_id": "\#(registration.userID)", "device_secret": "\#(Secrets.random256BitHex())"}"#)
            #expect(await intruder.next()?["error"]?.objectValue?["code"] == "wrong_device_secret")
            #expect(await intruder.isClosed())
            // The server is still fine.
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            await socket.close()
        }
    }

    @Test func aSubscriptionWhoseCredentialsCannotBeCheckedIsAnsweredStoreUnavailableAndTheSocketStays() async throws {
        var server = try TestServer()
        let store = try SQLiteStore(path: server.databasePath)
        server.store = store
        try await server.run { client in
            let socket = WebSocketTestClient(port: try #require(client.port))
            socket.send(#"{"id": 1, "type": "launch_rockets"}"#)
            #expect(await socket.next()?["error"]?.objectValue?["code"] == "unknown_command")  // the socket is open
            try await store.close()  // every read fails from now on
            let userID = Secrets.random256BitHex()
            socket.send(#"{"id": 2, "type": "push_notification_channel", "user_id": "\#(userID)", "device_secret": "b"}"#)
            let refusal = await socket.next()
            #expect(refusal?["id"] == 2)
            #expect(refusal?["error"]?.objectValue?["code"] == "store_unavailable")
            socket.send(#"{"id": 3, "type": "launch_rockets"}"#)
            #expect(await socket.next()?["id"] == 3)
            await socket.close()
        }
    }
}

@Suite("WebSocket hub")
struct WebSocketHubTests {
    @Test func aSlowClientsQueueIsBounded() async throws {
        let hub = WebSocketHub(confirmTimeout: .seconds(1), renderers: payloadRenderers, logger: Logger(label: "test"))
        let device = Fixtures.device(platform: .websocket).device
        // A socket whose writes never finish: its client stopped reading.
        let stalled = StalledWrites()
        let channel = NIOAsyncTestingChannel()
        try await channel.pipeline.addHandler(stalled)
        let subscribed = hub.subscribe(
            deviceID: device.id, messageID: 1, supportsConfirm: false, socket: WebSocketConnection(channel: channel))
        let subscription = try #require(subscribed)
        var delivered = 0
        for index in 0..<(WebSocketHub.sendQueueLimit + 20) {
            if await hub.deliver(Fixtures.notification(for: device, title: "n\(index)"), to: device) { delivered += 1 }
        }
        #expect(delivered == WebSocketHub.sendQueueLimit)
        #expect(try await channel.eventLoop.submit { stalled.heldCount }.get() == WebSocketHub.sendQueueLimit)
        // Once the socket has written them, it takes events again.
        try await channel.eventLoop.submit { stalled.finishAll() }.get()
        #expect(await hub.deliver(Fixtures.notification(for: device), to: device))
        hub.unsubscribe(subscription, deviceID: device.id)
        #expect(hub.isConnected(device.id) == false)
        #expect(await hub.deliver(Fixtures.notification(for: device), to: device) == false)
        try await channel.eventLoop.submit { stalled.finishAll() }.get()
        _ = try? await channel.finish()
    }
}

/// Holds back every write: a socket whose client stopped reading. Used on its channel's event loop only.
private final class StalledWrites: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = WebSocketFrame
    private var held: [EventLoopPromise<Void>] = []

    var heldCount: Int { held.count }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let promise { held.append(promise) }
    }

    func flush(context: ChannelHandlerContext) {}

    func finishAll() {
        let finished = held
        held = []
        for promise in finished { promise.succeed() }
    }
}

/// A subscribed socket without a network: it hands each event to `received` at once.
struct HandingOverSocket: SubscribedSocket {
    let received: @Sendable (String) -> Void

    func offer(event: String, limit: Int) -> Bool {
        received(event)
        return true
    }

    func close(_ code: WebSocketErrorCode, reason: String?) async {}
}
