import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// No device can stall another's delivery: a client that never confirms holds no delivery slot, the queues take
/// devices in turn, and a connected client gets its whole backlog at the pace of its confirmations.
@Suite("Fair delivery")
struct FairDeliveryTests {
    /// Registers a WebSocket-only device.
    static func registerWebSocketDevice(_ client: some TestClientProtocol) async throws -> Registration {
        let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
        return Registration(
            userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
    }

    @Test func aClientThatNeverConfirmsHoldsNoDeliverySlot() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.deliveryConcurrency = 2
        started.server.configuration.webSocketConfirmTimeout = .seconds(60)
        started.server.configuration.deliveryWait = .milliseconds(200)
        let apns = started
        try await apns.server.run { client in
            let silent = try await Self.registerWebSocketDevice(client)
            let other = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(silent)
            // Ten notifications that wait for a confirmation that never comes: five times the slots.
            for index in 0..<10 { #expect(try await client.notify(silent.userID, title: "n\(index)").status == .created) }
            for _ in 0..<2 { #expect(await socket.next(within: 20) != nil) }
            // Another user's notification still goes out (before: both slots waited 60 s for the confirmations).
            #expect(try await client.notify(other.userID).status == .created)
            #expect(await eventually(attempts: 200) { apns.production.acceptedPushes.count == 1 })
            await socket.close()
        }
        try await apns.shutdown()
    }

    @Test func oneDevicesBacklogDoesNotQueueAheadOfAnotherDevice() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.deliveryConcurrency = 1
        started.server.configuration.deliveryWait = .zero
        let apns = started
        apns.production.setResponseDelay(.milliseconds(200))
        try await apns.server.run { client in
            let busy = try await client.register(token: Fixtures.apnsToken(1))
            let other = try await client.register(token: Fixtures.apnsToken(2))
            for index in 0..<40 {
                #expect(try await client.notify(busy.userID, title: "b\(index)").status == .created)
                apns.server.clock.advance(by: 0.001)  // each due a moment after the one before, as in real time
            }
            let before = apns.production.requests.count
            #expect(try await client.notify(other.userID).status == .created)
            #expect(await eventually(attempts: 600) { apns.production.acceptedPushes.count == 41 })
            let order = apns.production.acceptedPushes.map(\.deviceToken)
            let position = try #require(order.firstIndex(of: Fixtures.apnsToken(2)))
            // In turn with the busy device: a few of its notifications at most, not the rest of its 40.
            #expect(position - before <= 6, "the other device's notification came \(position - before) after it was sent")
        }
        try await apns.shutdown()
    }

    @Test func aConnectedClientGetsItsWholeBacklogAtThePaceOfItsConfirmations() async throws {
        var server = try TestServer(dailyLimit: 10_000)
        server.configuration.maximumPendingPerDevice = 5_000
        try await server.run { client in
            let device = try await Self.registerWebSocketDevice(client)
            let port = try #require(client.port)
            // More than a subscribe ever claimed at once before (1,000), parked: no client is connected.
            let count = 1_100
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<8 {
                    group.addTask {
                        // Not the test client (its deadline is 20 s, which a loaded two-core run passed): 120 s.
                        for index in stride(from: sender, to: count, by: 8) {
                            let body = #"{"user_id": "\#(device.userID)", "title": "n\#(index)", "body": "Garden"}"#
                            let id = try await postNotify(port: port, body: body, timeout: .seconds(120))
                            #expect(id != nil)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let socket = WebSocketTestClient(port: port)
            await socket.subscribe(device)
            var received = Set<String>()
            while received.count < count, let message = await socket.next(within: 20) {
                guard let event = message["event"]?.objectValue, let id = event["id"]?.stringValue else { continue }
                received.insert(id)
                socket.send(#"{"id": 9, "type": "push_notification_confirm", "confirm_id": "\#(event["hass_confirm_id"]?.stringValue ?? "")"}"#)
            }
            #expect(received.count == count)
            await socket.close()
        }
    }

    @Test func subscribingAgainAndAgainClaimsNoMoreThanAPage() async throws {
        var server = try TestServer()
        // Nothing unconfirmed comes back during the test (it would after the timeout, with the retry back-off).
        server.configuration.webSocketConfirmTimeout = .seconds(120)
        try await server.run { client in
            let device = try await Self.registerWebSocketDevice(client)
            var ids: [String] = []
            for index in 0..<100 {
                let response = try await client.notify(device.userID, title: "n\(index)")
                ids.append(try #require(try response.json()["id"]?.stringValue))
            }
            // The scheduler's next read of the outbox (every 5 s) tries them once and parks them until their expiry.
            // Until then they are due, and a read while the client is connected would hand them over besides.
            for id in [ids[0], ids[99]] {
                #expect(try await eventually(attempts: 600) {
                    let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: device.bearer).json()
                    return status["next_attempt_at"] != nil && status["next_attempt_at"] == status["expires_at"]
                })
            }
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(device)
            // The client confirms nothing and subscribes again: the page out is not claimed twice, nothing more is.
            for id in 2...4 {
                socket.send(#"{"id": \#(id), "type": "push_notification_channel", "user_id": "\#(device.userID)", "device_secret": "\#(device.secret)", "support_confirm": true}"#)
            }
            var received = Set<String>()
            while received.count < 100, let message = await socket.next(within: 5) {
                if let id = message["event"]?.objectValue?["id"]?.stringValue { received.insert(id) }
            }
            #expect(received.count == 32)
            await socket.close()
        }
    }
}
