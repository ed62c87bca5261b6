import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Sends through the whole server to a push-service double over HTTPS, for Web Push devices, and checks what reached
/// it once decrypted with the subscription's private key: every dialect's payload (docs/payloads.md), the RFC 8030
/// headers, the answers for gone subscriptions, retries and refusals, and the egress rules.
@Suite("Delivery to Web Push")
struct WebPushDeliveryTests {
    @Test func cameraNotifyReachesThePushServiceEncryptedWithTheTopicTTLAndUrgency() async throws {
        let push = try await WebPushTestServer.start()
        let subscription = push.double.makeSubscription()
        try await push.server.run { client in
            let registration = try await client.registerWebPush(subscription)
            let response = try await client.post("/api/push/notify", SeedExamples.filled(SeedExamples.frigateReview, registration.userID))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered")
            let id = try #require(json["id"]?.stringValue)

            let message = try #require(await push.received(for: subscription))
            #expect(message.json["title"] == "Review item detected")
            #expect(message.json["body"] == "Front Door")
            #expect(message.json["tag"] == "review-123")
            #expect(message.json["id"] == .string(id))
            #expect(message.json["data"]?.objectValue?["notification_id"] == "review-123")
            #expect(message.headers["content-encoding"] == "aes128gcm")
            #expect(message.headers["ttl"] == "86400")
            #expect(message.headers["urgency"] == "normal")
            #expect(message.headers["topic"] == "review-123")
            #expect(message.claims["sub"] == .string(WebPushTestServer.subject))
            #expect(message.claims["aud"] == .string("https://127.0.0.1:\(push.double.port)"))

            // The status API reports the push service's Location as the provider's id.
            let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(state["status"] == "delivered")
            #expect(state["provider_message_id"]?.stringValue?.hasPrefix("/message/") == true)
            #expect(state["apns_id"] == nil)

            // The key a browser subscribes with is the one the push service saw in `k`.
            let key = try await client.execute(uri: "/api/push/webpush/key", method: .get).json()
            let authorization = try #require(message.headers["authorization"])
            #expect(authorization.hasSuffix(",k=\(try #require(key["public_key"]?.stringValue))"))
        }
        try await push.shutdown()
    }

    @Test func actionNotificationsCarryTheirActionsAndLevelsBecomeUrgencies() async throws {
        let push = try await WebPushTestServer.start()
        let subscription = push.double.makeSubscription()
        try await push.server.run { client in
            let owner = try await client.registerWebPush(subscription)
            let apiToken = try await client.createToken(for: owner)
            let urgent = try await client.post(
                "/notifications",
                #"{"title": "Door", "body": "Open it?", "level": "time-sensitive", "image_url": "https://img.example/d.png", "url": "https://ha.example/door", "notification_id": "a long collapse id that is not base64url at all", "actions": [{"id": "open", "title": "Open", "url": "https://ha.example/open", "method": "POST"}]}"#,
                headers: apiToken.bearer)
            #expect(urgent.status == .created)
            let first = try #require(await push.received(for: subscription))
            #expect(first.json["title"] == "Door")
            #expect(first.json["body"] == "Open it?")
            #expect(first.json["image"] == "https://img.example/d.png")
            #expect(first.json["url"] == "https://ha.example/door")
            let action = try #require(first.json["actions"]?.arrayValue?.first?.objectValue)
            #expect(action["id"] == "open")
            #expect(action["title"] == "Open")
            #expect(action["url"] == "https://ha.example/open")
            #expect(first.headers["urgency"] == "high")
            // A collapse id a push service would refuse becomes a 32-character digest.
            let topic = try #require(first.headers["topic"])
            #expect(topic.count == 32 && topic.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })

            let quiet = try await client.post(
                "/notifications", #"{"title": "Washer", "body": "Done", "level": "passive"}"#, headers: apiToken.bearer)
            #expect(quiet.status == .created)
            let second = try #require(await push.received(for: subscription, number: 2))
            #expect(second.headers["urgency"] == "low")
            #expect(second.headers["topic"] == nil)
        }
        try await push.shutdown()
    }

    @Test func homeAssistantNotificationsReachAWebPushDeviceWithWhatABrowserShowsOfTheirData() async throws {
        let push = try await WebPushTestServer.start(clock: TestClock(HomeAssistantTests.noon))
        let subscription = push.double.makeSubscription()
        try await push.server.run { client in
            let registration = try await client.registerWebPush(subscription)
            let data = #"{"image": "https://ha.example/cam.jpg", "url": "https://ha.example/garage", "tag": "garage", "actions": [{"action": "CLOSE", "title": "Close", "uri": "https://ha.example/close"}, {"action": "IGNORE", "title": "Ignore"}]}"#
            let relayed = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, message: "Garage open", title: "Home", data: data))
            #expect(relayed.status == .created)
            let message = try #require(await push.received(for: subscription))
            #expect(message.json["title"] == "Home")
            #expect(message.json["body"] == "Garage open")
            #expect(message.json["image"] == "https://ha.example/cam.jpg")
            #expect(message.json["url"] == "https://ha.example/garage")
            #expect(message.json["tag"] == "garage")
            #expect(message.headers["topic"] == "garage")
            #expect(
                message.json["actions"]
                    == [["id": "CLOSE", "title": "Close", "url": "https://ha.example/close"], ["id": "IGNORE", "title": "Ignore"]])

            // A command has no alert; a browser must show something: its message.
            let command = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, message: "clear_badge", title: nil))
            #expect(command.status == .created)
            let shown = try #require(await push.received(for: subscription, number: 2))
            #expect(shown.json["body"] == "clear_badge")
        }
        try await push.shutdown()
    }

    @Test func aGoneSubscriptionMakesTheDeviceInactiveUntilItRegistersAgain() async throws {
        let push = try await WebPushTestServer.start()
        let gone = push.double.makeSubscription()
        push.double.markGone(gone, status: 410)
        try await push.server.run { client in
            let registration = try await client.registerWebPush(gone)
            let first = try await client.notify(registration.userID)
            #expect(first.status == .gone)
            #expect(try first.json()["code"] == "device_must_reregister")
            let second = try await client.notify(registration.userID)
            #expect(second.status == .gone)
            #expect(push.double.refused.count == 1)  // the inactive device is not sent to again

            // Browsers rotate subscriptions: registering again with the owner's credentials replaces it.
            let fresh = push.double.makeSubscription()
            _ = try await client.registerWebPush(fresh, headers: registration.basic)
            let delivered = try await client.notify(registration.userID)
            #expect(try delivered.json()["status"] == "delivered")
            #expect(await push.received(for: fresh) != nil)
        }
        try await push.shutdown()
    }

    @Test func notFoundIsAGoneSubscriptionToo() async throws {
        let push = try await WebPushTestServer.start()
        let gone = push.double.makeSubscription()
        push.double.markGone(gone, status: 404)
        try await push.server.run { client in
            let registration = try await client.registerWebPush(gone)
            #expect(try await client.notify(registration.userID).status == .gone)
        }
        try await push.shutdown()
    }

    @Test func tooManyRequestsIsRetriedNoEarlierThanRetryAfterAndThenDelivered() async throws {
        let push = try await WebPushTestServer.start()
        let subscription = push.double.makeSubscription()
        push.double.failNext(1, .init(status: 429, retryAfter: 120, body: "slow down"))
        try await push.server.run { client in
            let registration = try await client.registerWebPush(subscription)
            let response = try await client.notify(registration.userID)
            #expect(try response.json()["status"] == "queued")
            let id = try #require(try response.json()["id"]?.stringValue)
            let pending = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(pending["status"] == "pending")
            #expect(pending["last_error"] == "HTTP 429: slow down")
            let nextAttempt = try #require(pending["next_attempt_at"]?.stringValue.flatMap {
                try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0)
            })
            #expect(nextAttempt.timeIntervalSince(push.server.clock.now()) > 119.99)
            push.server.clock.advance(by: 121)
            #expect(await push.received(for: subscription, number: 2) != nil)
            #expect(push.double.received.map(\.status) == [429, 201])
        }
        try await push.shutdown()
    }

    @Test func payloadTooLargeAndAuthorizationRefusalsFailForGoodWithTheServicesReason() async throws {
        let push = try await WebPushTestServer.start()
        let subscription = push.double.makeSubscription()
        push.double.failNext(1, .init(status: 413, body: "payload too large"))
        push.double.failNext(1, .init(status: 403, body: "VAPID key mismatch"))
        try await push.server.run { client in
            let registration = try await client.registerWebPush(subscription)
            for expected in ["HTTP 413: payload too large", "HTTP 403: VAPID key mismatch"] {
                let response = try await client.notify(registration.userID)
                let id = try #require(try response.json()["id"]?.stringValue)
                let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
                #expect(state["status"] == "failed")
                #expect(state["last_error"] == .string(expected))
            }
            #expect(push.double.received.map(\.status) == [413, 403])
        }
        try await push.shutdown()
    }
}
