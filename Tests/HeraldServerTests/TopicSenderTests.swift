import Foundation
import HTTPTypes
import HeraldCore
import HeraldFCM
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Topic ids wherever a send names a USER_ID: members on APNs, FCM and the WebSocket channel; ntfy's and Bark's
/// dialects; the status API of each member's notification.
@Suite("Topic senders")
struct TopicSenderTests {
    /// One send to a topic whose members are an APNs device, an FCM device and a WebSocket-only device with its client
    /// connected: each gets the notification through its own channel, and the sender reads each member's status with the
    /// topic id (a notification of a device outside the topic stays invisible to it).
    @Test func membersOnAPNsFCMAndTheWebSocketChannel() async throws {
        var apns = try await APNsTestServer.start()
        let fcm = try await FCMDouble.start(projectID: FCMTestServer.account.projectID, serviceAccount: FCMTestServer.account, clock: apns.server.clock)
        apns.server.configuration.fcm = FCMConfiguration(
            serviceAccount: .file(path: try fcm.writeServiceAccount()), baseURL: fcm.baseURL, trustedCAPath: fcm.caPath,
            requestTimeout: .seconds(60))
        let production = apns.production
        try await apns.server.run { client in
            let phone = try await client.register(token: Fixtures.apnsToken(1))
            let android = try await client.registerFCM(token: Fixtures.fcmToken(2))
            let registered = try await client.post("/api/push/register", #"{"platform": "websocket"}"#).json()
            let desktop = Registration(
                userID: try #require(registered["user_id"]?.stringValue), secret: try #require(registered["device_secret"]?.stringValue))
            let outsider = try await client.register(token: Fixtures.apnsToken(9))
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(desktop, confirm: false)

            let topic = try await client.createTopic(by: phone)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: android).status == .created)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: desktop).status == .created)

            let response = try await client.notify(topic.topicID, title: "Doorbell", body: "Someone is at the door")
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["delivery"] == "all")
            let members = try #require(json["members"]?.elements).compactMap(\.objectValue)
            #expect(members.count == 3)
            #expect(members.allSatisfy { $0["delivery"] == "delivered" })
            let ids = members.compactMap { $0["id"]?.stringValue }

            #expect(production.acceptedPushes.count == 1)
            #expect(production.acceptedPushes.first?.header("apns-id") == ids[0])
            #expect(fcm.acceptedMessages.filter { $0.target == .token(Fixtures.fcmToken(2)) }.count == 1)
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["title"] == "Doorbell" && event["id"]?.stringValue.map(ids.dropFirst().contains) == true)

            // Each member's notification, read with the topic id.
            let bearer: HTTPFields = [.authorization: "Bearer \(topic.topicID)"]
            for id in ids {
                let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: bearer)
                #expect(status.status == .ok)
                #expect(try status.json()["status"] == "delivered")
            }
            let alone = try await client.notify(outsider.userID).json()["id"]?.stringValue ?? ""
            #expect(try await client.execute(uri: "/api/push/notifications/\(alone)", method: .get, headers: bearer).status == .notFound)
            await socket.close()
        }
        try await fcm.shutdown()
        try await apns.shutdown()
    }

    /// Browsers as members: each subscription gets the topic's notification encrypted for it (the Web Push double
    /// decrypts it with the subscription's own keys), and each member's answer names its own notification.
    @Test func browserMembersGetItEncryptedForEachSubscription() async throws {
        let push = try await WebPushTestServer.start()
        let subscriptions = [push.double.makeSubscription(), push.double.makeSubscription()]
        try await push.server.run { client in
            let creator = try await client.registerWebPush(subscriptions[0])
            let member = try await client.registerWebPush(subscriptions[1])
            let topic = try await client.createTopic(by: creator)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: member).status == .created)

            let response = try await client.notify(topic.topicID, title: "Doorbell", body: "Someone is at the door")
            #expect(response.status == .created)
            let members = try #require(try response.json()["members"]?.elements).compactMap(\.objectValue)
            #expect(members.count == 2 && members.allSatisfy { $0["delivery"] == "delivered" })
            for subscription in subscriptions {
                let message = try #require(await push.received(for: subscription))
                #expect(message.json["title"] == "Doorbell" && message.json["body"] == "Someone is at the door")
                #expect(members.contains { $0["id"] == message.json["id"] })
            }
        }
        try await push.shutdown()
    }

    /// ntfy's `PUT /<topic>` and `POST /` with a topic id, and Bark's `POST /push` and path form with one as the device
    /// key: every member gets it, each dialect answers in its own shape.
    @Test func ntfyAndBarkPublishToATopicID() async throws {
        let apns = try await APNsTestServer.start()
        let production = apns.production
        try await apns.server.run { client in
            let phone = try await client.register(token: Fixtures.apnsToken(1))
            let tablet = try await client.register(token: Fixtures.apnsToken(2))
            let topic = try await client.createTopic(by: phone)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: tablet).status == .created)

            var response = try await client.ntfy("/\(topic.topicID)", body: "Backup done", method: .put)
            #expect(response.status == .ok)
            #expect(response.headers[HTTPField.Name("X-Herald-Delivery")!] == "all")
            var json = try response.json()
            #expect(json["event"] == "message" && json["topic"] == .string(topic.topicID) && json["message"] == "Backup done")
            #expect(production.acceptedPushes.count == 2)

            response = try await client.ntfy(
                "/", body: #"{"topic": "\#(topic.topicID)", "message": "Disk full", "title": "NAS"}"#, contentType: "application/json")
            #expect(response.status == .ok)
            #expect(production.acceptedPushes.count == 4)

            response = try await client.post("/push", #"{"device_key": "\#(topic.topicID)", "title": "Bark", "body": "Hello"}"#)
            #expect(response.status == .ok)
            json = try response.json()
            #expect(json["code"] == 200 && json["message"] == "success")
            response = try await client.execute(uri: "/\(topic.topicID)/Title/Body", method: .get)
            #expect(response.status == .ok)
            #expect(production.acceptedPushes.count == 8)
            let tokens = production.acceptedPushes.compactMap(\.deviceToken)
            #expect(tokens.filter { $0 == Fixtures.apnsToken(1) }.count == 4 && tokens.filter { $0 == Fixtures.apnsToken(2) }.count == 4)

            // An unknown topic id: ntfy's 404 and Bark's, in their shapes.
            let unknown = TopicID.random().text
            response = try await client.ntfy("/\(unknown)", body: "x", method: .put)
            #expect(response.status == .notFound)
            #expect(try response.json()["code"] == 40401)
            response = try await client.post("/push", #"{"device_key": "\#(unknown)", "body": "x"}"#)
            #expect(response.status == .notFound)
            #expect(try response.json()["code"] == 404)
        }
        try await apns.shutdown()
    }
}

@Suite("herald send to a topic")
struct TopicCommandLineTests {
    /// `herald send --user-id tp_…` sends to every member and prints each member's outcome.
    @Test func heraldSendPrintsEachMembersOutcome() async throws {
        let apns = try await APNsTestServer.start()
        let production = apns.production
        try await apns.server.run { client in
            let server = "http://127.0.0.1:\(try #require(client.port))"
            let phone = try await client.register(token: Fixtures.apnsToken(1))
            let tablet = try await client.register(token: Fixtures.apnsToken(2))
            let topic = try await client.createTopic(by: phone)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: tablet).status == .created)
            let sent = try await HeraldProcess.run(["send", "--server", server, "--user-id", topic.topicID, "--title", "T", "--body", "B"])
            #expect(sent.status == 0, "\(sent.output)")
            #expect(sent.output.hasPrefix("delivery: all"), "\(sent.output)")
            #expect(sent.output.components(separatedBy: ": delivered ").count == 3, "\(sent.output)")
            #expect(sent.output.contains("member \(topic.memberID): delivered"))
            #expect(production.acceptedPushes.count == 2)
        }
        try await apns.shutdown()
    }
}
