import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Sends through the whole server to the FCM double over HTTP/2 + TLS, for FCM devices, and checks what reached it:
/// every dialect's mapping (docs/payloads.md), the answers for dead tokens, Home Assistant's relay and the WebSocket
/// channel with its fallback.
@Suite("Delivery to FCM")
struct FCMDeliveryTests {
    @Test func cameraNotifyBecomesANotificationMessageWithTheCollapseKeyAndTheObjectsAsData() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(1)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let response = try await client.post("/api/push/notify", SeedExamples.filled(SeedExamples.frigateReview, registration.userID))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered")

            let sent = try #require(await fcm.acceptedMessage(to: token))
            #expect(
                sent.message == [
                    "token": .string(token),
                    "notification": ["title": "Review item detected", "body": "Front Door"],
                    "data": [
                        "notification_id": "review-123",
                        "snapshot": #"{"id":"review-123","type":"frigate_review"}"#,
                        "open": #"{"id":"review-123","type":"frigate_review"}"#,
                    ],
                    "android": [
                        "priority": "HIGH", "collapse_key": "review-123", "ttl": "86400s",
                        "notification": ["sound": "default", "tag": "review-123"],
                    ],
                ])
            // The status API reports FCM's message name as the provider's id.
            let id = try #require(json["id"]?.stringValue)
            let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(state["status"] == "delivered")
            #expect(state["attempts"] == 1)
            #expect(state["provider_message_id"] == .string(sent.name))
            #expect(state["apns_id"] == nil)
        }
        #expect(fcm.fcm.tokenRequests.count == 1)
        try await fcm.shutdown()
    }

    @Test func aURLSnapshotIsTheNotificationsImage() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(2)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let response = try await client.notify(
                registration.userID, extra: #", "snapshot": {"type": "url", "url": "https://cam.example/snap.jpg"}"#)
            #expect(response.status == .created)
            let sent = try #require(await fcm.acceptedMessage(to: token))
            #expect(sent.message["notification"] == ["title": "Motion", "body": "Garden", "image": "https://cam.example/snap.jpg"])
            #expect(sent.message["android"]?.objectValue?["collapse_key"] == nil)
        }
        try await fcm.shutdown()
    }

    @Test func actionNotificationsWithoutButtonsAreNotificationMessagesAndWithButtonsDataOnly() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(3)
        try await fcm.server.run { client in
            let owner = try await client.registerFCM(token: token)
            let apiToken = try await client.createToken(for: owner)
            let plain = try await client.post(
                "/notifications",
                #"{"title": "Washer", "body": "Done", "level": "passive", "source": "laundry", "image_url": "https://img.example/w.png", "url": "https://ha.example/laundry", "notification_id": "washer"}"#,
                headers: apiToken.bearer)
            #expect(plain.status == .created)
            let first = try #require(await fcm.acceptedMessage(to: token))
            #expect(
                first.message == [
                    "token": .string(token),
                    "notification": ["title": "Washer", "body": "Done", "image": "https://img.example/w.png"],
                    "data": [
                        "level": "passive", "source": "laundry", "image_url": "https://img.example/w.png",
                        "url": "https://ha.example/laundry", "notification_id": "washer",
                    ],
                    "android": [
                        "priority": "NORMAL", "collapse_key": "washer", "ttl": "86400s",
                        "notification": [
                            "notification_priority": "PRIORITY_LOW", "sound": "default", "channel_id": "laundry", "tag": "washer",
                        ],
                    ],
                ])

            let withButtons = try await client.post(
                "/notifications",
                #"{"title": "Door", "body": "Open it?", "level": "time-sensitive", "actions": [{"id": "open", "title": "Open", "url": "https://ha.example/open", "method": "POST"}]}"#,
                headers: apiToken.bearer)
            #expect(withButtons.status == .created)
            let second = try #require(await fcm.acceptedMessage(to: token, number: 2))
            #expect(second.message["notification"] == nil)
            let data = try #require(second.message["data"]?.objectValue)
            #expect(data["title"] == "Door")
            #expect(data["body"] == "Open it?")
            #expect(data["level"] == "time-sensitive")
            let actions = try JSONValue.decode(Data(try #require(data["actions"]?.stringValue).utf8))
            #expect(actions.arrayValue?.first?.objectValue?["id"] == "open")
            #expect(actions.arrayValue?.first?.objectValue?["url"] == "https://ha.example/open")
            #expect(second.message["android"]?.objectValue?["priority"] == "HIGH")
        }
        try await fcm.shutdown()
    }

    @Test func theAndroidRowsTheRelayAddedLately() async throws {
        let fcm = try await FCMTestServer.start(dailyLimit: 5, clock: TestClock(HomeAssistantTests.noon))
        let token = Fixtures.fcmToken(5)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let data = #"{"actions": [{"action": "UNLOCK", "title": "Unlock", "authenticationRequired": true}], "notification_icon_color": "red", "live_update": true, "critical_text": "5 min"}"#
            let alert = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: data))
            #expect(alert.status == .created)
            let sent = try #require(await fcm.acceptedMessage(to: token))
            let fields = try #require(sent.message["data"]?.objectValue)
            #expect(fields["action_1_authenticationRequired"] == "true")
            #expect(fields["notification_icon_color"] == "red")
            #expect(fields["live_update"] == "true")
            #expect(fields["critical_text"] == "5 min")
            #expect(sent.message["android"]?.objectValue?["priority"] == nil)

            let command = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: "command_wake_word_detection"))
            #expect(command.status == .created)
            #expect(try command.json()["rateLimits"]?.objectValue?["successful"] == 1)
        }
        try await fcm.shutdown()
    }

    @Test func homeAssistantsRelayForAnFCMDeviceSendsWhatTheAndroidAppExpects() async throws {
        let fcm = try await FCMTestServer.start(dailyLimit: 2, clock: TestClock(HomeAssistantTests.noon))
        let token = Fixtures.fcmToken(4)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let data = #"""
                {"actions": [{"action": "ALARM", "title": "Sound alarm", "uri": "/lovelace/cams"}, {"action": "IGNORE", "title": "Ignore"}],
                 "channel": "Motion", "tag": "cam1", "color": "#2DF56D", "sticky": true, "importance": "high", "ttl": 0,
                 "priority": "high", "data": {"extra": 5}, "android": {"priority": "high", "ttl": "0s"}}
                """#
            let response = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, message: "Motion at the door", title: "Camera", data: data))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["target"] == .string(registration.userID))
            try expectValidRateLimits(json["rateLimits"])
            #expect(json["rateLimits"]?.objectValue?["successful"] == 1)

            let sent = try #require(await fcm.acceptedMessage(to: token))
            // Data-only: the app draws the notification; every value a string.
            #expect(sent.message["notification"] == nil)
            #expect(
                sent.message["data"] == [
                    "message": "Motion at the door", "title": "Camera", "webhook_id": "webhook_id_from_registration",
                    "action_1_key": "ALARM", "action_1_title": "Sound alarm", "action_1_uri": "/lovelace/cams",
                    "action_2_key": "IGNORE", "action_2_title": "Ignore",
                    "channel": "Motion", "tag": "cam1", "color": "#2DF56D", "sticky": "true", "importance": "high", "extra": "5",
                ])
            // data.android replaces the android block wholesale, as the relay passes it through.
            #expect(sent.message["android"] == ["priority": "high", "ttl": "0s"])

            // Commands are exempt from the quota; the second alert uses it up and the third is refused with 429.
            let command = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: "command_dnd", data: #"{"command": "off"}"#))
            #expect(command.status == .created)
            #expect(try command.json()["rateLimits"]?.objectValue?["successful"] == 1)
            let commandMessage = try #require(await fcm.acceptedMessage(to: token, number: 2))
            #expect(commandMessage.message["data"]?.objectValue?["command"] == "off")
            // No data.priority: FCM's own (normal for a data message), as android.js leaves it.
            #expect(commandMessage.message["android"]?.objectValue?["priority"] == nil)
            let second = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(second.status == .created)
            let refused = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(refused.status == .tooManyRequests)
            #expect(try refused.json()["errorType"] == "RateLimited")
            // The "quota used up" notice for an FCM device is an FCM message too.
            var notice: JSONObject?
            _ = await eventually {
                notice = fcm.fcm.acceptedMessages.first { $0.message["data"]?.objectValue?["rateLimited"] == "true" }?.message
                return notice != nil
            }
            #expect(notice?["data"]?.objectValue?["maxNotificationsPerDay"] == "2")
            #expect(notice?["android"]?.objectValue?["notification"]?.objectValue?["body_loc_key"] == "rate_limit_notification.body")
        }
        try await fcm.shutdown()
    }

    @Test func aMessageOver4096BytesHasItsBodyShortenedAsForAPNs() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(10)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let long = String(repeating: "ü", count: 3_000)  // 6,000 bytes of body
            let notify = try await client.notify(registration.userID, body: long)
            #expect(notify.status == .created)
            #expect(try notify.json()["truncated"] == true)
            let relayed = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: long))
            #expect(relayed.status == .created)

            let first = try #require(await fcm.acceptedMessage(to: token))
            let body = try #require(first.message["notification"]?.objectValue?["body"]?.stringValue)
            #expect(body.hasSuffix("…") && long.hasPrefix(body.dropLast()))
            let second = try #require(await fcm.acceptedMessage(to: token, number: 2))
            let message = try #require(second.message["data"]?.objectValue?["message"]?.stringValue)
            #expect(message.hasSuffix("…") && long.hasPrefix(message.dropLast()))
            // What Herald stored fits 4096 bytes; the double, which counts the message without its target, took both.
            for sent in [first, second] {
                var stored = sent.message
                stored["token"] = nil
                stored["android"] = stored["android"]?.objectValue.map { android in
                    var android = android
                    android["ttl"] = nil
                    return .object(android)
                }
                #expect(try JSONValue.object(stored).encoded().count <= 4096)
            }
        }
        try await fcm.shutdown()
    }

    @Test func deadFCMTokensAre410OrInvalidTokenAndTheDeviceStopsUntilItRegistersAgain() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(5)
        fcm.fcm.markUnregistered(token)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let first = try await client.notify(registration.userID)
            #expect(first.status == .gone)
            #expect(try first.json()["code"] == "device_must_reregister")
            #expect(try first.json()["reason"] == "UNREGISTERED: Requested entity was not found.")
            let relayed = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(relayed.status == .internalServerError)
            #expect(try relayed.json()["errorType"] == "InvalidToken")
            #expect(fcm.fcm.requests.count == 1)  // the inactive device is not sent to again

            let newToken = Fixtures.fcmToken(6)
            let again = try await client.post(
                "/api/push/register", #"{"platform": "fcm", "token": "\#(newToken)"}"#, headers: registration.basic)
            #expect(again.status == .ok)
            let delivered = try await client.notify(registration.userID)
            #expect(try delivered.json()["status"] == "delivered")
            #expect(await fcm.acceptedMessage(to: newToken) != nil)

            // The provider metrics count FCM's answers by errorCode, without a token in the exposition.
            let text = String(decoding: try await client.execute(uri: "/metrics", method: .get).body.readableBytesView, as: UTF8.self)
            let samples = Exposition(text)
            #expect(samples["herald_provider_responses_total{provider=\"fcm\",status=\"404\",reason=\"UNREGISTERED\"}"] == 1)
            #expect(samples["herald_provider_responses_total{provider=\"fcm\",status=\"200\",reason=\"none\"}"] == 1)
            #expect(samples["herald_notifications_delivered_total{provider=\"fcm\"}"] == 1)
            #expect(samples["herald_notifications_failed_total{provider=\"fcm\",reason=\"dead_token\"}"] == 1)
            #expect(!text.contains(token) && !text.contains(newToken))
        }
        try await fcm.shutdown()
    }

    @Test func quotaExceededIsRetriedNoEarlierThanRetryAfterAndThenDelivered() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(7)
        fcm.fcm.failNext(1, .quotaExceeded, retryAfter: 300)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let response = try await client.notify(registration.userID)
            #expect(response.status == .created)
            #expect(try response.json()["status"] == "queued")
            let id = try #require(try response.json()["id"]?.stringValue)
            let pending = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(pending["status"] == "pending")
            #expect(pending["last_error"]?.stringValue?.hasPrefix("QUOTA_EXCEEDED") == true)
            // FCM's Retry-After is honoured: the test clock stands still until the test moves it past that time.
            let nextAttempt = try #require(pending["next_attempt_at"]?.stringValue.flatMap {
                try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0)
            })
            #expect(nextAttempt.timeIntervalSince(fcm.server.clock.now()) > 299.99)  // the answer has milliseconds
            fcm.server.clock.advance(by: 301)
            #expect(await fcm.acceptedMessage(to: token) != nil)
            #expect(fcm.fcm.requests.map(\.status) == [429, 200])
        }
        try await fcm.shutdown()
    }

    @Test func aConfirmedWebSocketDeliveryOfAnFCMDeviceNeverReachesFCM() async throws {
        let fcm = try await FCMTestServer.start()
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: Fixtures.fcmToken(8))
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, id: 3)
            async let answer = client.post("/api/push/notify", SeedExamples.filled(SeedExamples.frigateReview, registration.userID))
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["title"] == "Review item detected")
            #expect(event["body"] == "Front Door")
            #expect(event["data"]?.objectValue?["notification_id"] == "review-123")
            socket.send(#"{"id": 4, "type": "push_notification_confirm", "confirm_id": "\#(event["hass_confirm_id"]?.stringValue ?? "")"}"#)
            #expect(await socket.next() == ["id": 4, "type": "result", "success": true])
            #expect(try await answer.json()["status"] == "delivered")
            await socket.close()
        }
        #expect(fcm.fcm.requests.isEmpty)
        try await fcm.shutdown()
    }

    @Test func withoutAConfirmationAnFCMDeviceFallsBackToFCMExactlyOnce() async throws {
        var started = try await FCMTestServer.start()
        started.server.configuration.webSocketConfirmTimeout = .seconds(1)
        started.server.configuration.deliveryWait = .milliseconds(100)
        let fcm = started
        let token = Fixtures.fcmToken(9)
        try await fcm.server.run { client in
            let registration = try await client.registerFCM(token: token)
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration)
            let response = try await client.notify(registration.userID)
            let id = try #require(try response.json()["id"]?.stringValue)
            #expect(await socket.next()?["event"]?.objectValue?["hass_confirm_id"] != nil)
            #expect(await fcm.acceptedMessage(to: token) != nil)
            #expect(try await eventually {
                try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()["status"] == "delivered"
            })
            try? await Task.sleep(for: .seconds(1))
            #expect(fcm.fcm.acceptedMessages.count == 1)
            await socket.close()
        }
        try await fcm.shutdown()
    }
}

extension JSONValue {
    var arrayValue: [JSONValue]? { if case .array(let elements) = self { elements } else { nil } }
}
