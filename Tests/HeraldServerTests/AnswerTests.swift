import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Issue 39, section 2: answers over real HTTP. An action without a `url` (and not `foreground`) makes a notification
/// answerable; the app reports the tap with the device's credentials; the sender long-polls for it with its token.
@Suite("Answers")
struct AnswerTests {
    static let answerable = #"""
        {"title": "Water leak", "body": "Basement", "actions": [
          {"id": "ack", "title": "On my way", "text_input": true},
          {"id": "ignore", "title": "Ignore", "destructive": true},
          {"id": "open", "title": "Open", "url": "https://ha.example.com/"},
          {"id": "app", "title": "App", "foreground": true}]}
        """#

    /// Sends `body` with `token` and returns the notification's id.
    private func send(_ client: some TestClientProtocol, _ token: CreatedToken, _ body: String = answerable) async throws -> String {
        let response = try await client.sendAction(token.bearer, body: body)
        #expect(response.status == .created)
        return try #require(try response.json()["id"]?.stringValue)
    }

    private func report(_ client: some TestClientProtocol, _ id: String, _ body: String, as owner: Registration) async throws -> TestResponse {
        try await client.post("/api/push/notifications/\(id)/answer", body, headers: owner.basic)
    }

    private func poll(_ client: some TestClientProtocol, _ id: String, wait: String? = nil, _ token: CreatedToken) async throws -> TestResponse {
        try await client.execute(uri: "/notifications/answers/\(id)" + (wait.map { "?wait=\($0)" } ?? ""), method: .get, headers: token.bearer)
    }

    @Test func aTapIsAnsweredOnceAndTheSenderReadsIt() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let response = try await client.sendAction(token.bearer, body: Self.answerable)
            #expect(try response.json()["answerable"] == true)
            let id = try #require(try response.json()["id"]?.stringValue)

            let pending = try await poll(client, id, token)
            #expect(pending.status == .ok)
            #expect(try pending.json() == ["notification_id": .string(id), "status": "pending", "action_id": .null, "text": .null, "answered_at": .null])

            let answered = try await report(client, id, #"{"action_id": "ack", "text": "10 minutes"}"#, as: owner)
            #expect(answered.status == .noContent)
            let read = try await poll(client, id, wait: "5", token)
            let json = try read.json()
            #expect(json["status"] == "answered" && json["action_id"] == "ack" && json["text"] == "10 minutes")
            #expect(json["answered_at"]?.stringValue?.hasSuffix("Z") == true)

            // The first answer wins: a later one is 409 with the first.
            let later = try await report(client, id, #"{"action_id": "ignore"}"#, as: owner)
            #expect(later.status == .conflict)
            #expect(try later.json()["code"] == "already_answered")
            #expect(try later.json()["answer"]?.objectValue?["action_id"] == "ack")
            #expect(try await poll(client, id, token).json()["action_id"] == "ack")

            // The status API shows the answer too.
            let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: owner.basic)
            #expect(try status.json()["answer"]?.objectValue?["action_id"] == "ack")
        }
    }

    @Test func aLongPollIsWokenByTheAnswer() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let id = try await send(client, token)
            // The held poll on a connection of its own: the test client's one connection would queue the report behind
            // it (the poll then ran into the client's read timeout, or answered only after its 25 s).
            let url = "http://127.0.0.1:\(try #require(client.port))/notifications/answers/\(id)?wait=25"
            async let held = clusterRequest(.GET, url, headers: [("Authorization", "Bearer \(token.token)")], timeout: .seconds(145))
            try await Task.sleep(for: .milliseconds(500))  // most likely parked by then (if not, it reads the answer at once)
            // Answered while the poll is held; the poll answers as soon as the answer lands (well before 25 s).
            let answer = try await report(client, id, #"{"action_id": "ignore"}"#, as: owner)
            #expect(answer.status == .noContent)
            let json = try await held.json
            #expect(json["status"] == "answered" && json["action_id"] == "ignore" && json["text"] == .null)
        }
    }

    @Test func refusedAnswers() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let id = try await send(client, token)
            let cases: [(String, HTTPResponse.Status, String, String)] = [
                (#"{}"#, .badRequest, "invalid_field", "action_id"),
                (#"{"action_id": "nope"}"#, .badRequest, "invalid_field", "action_id"),
                (#"{"action_id": "open"}"#, .badRequest, "invalid_field", "action_id"),  // has a url
                (#"{"action_id": "app"}"#, .badRequest, "invalid_field", "action_id"),  // foreground
                (#"{"action_id": "ignore", "text": "no"}"#, .badRequest, "invalid_field", "text"),  // no text_input
                (#"{"action_id": "ack", "text": "\#(String(repeating: "t", count: 4097))"}"#, .badRequest, "invalid_field", "text"),
                (#"{"action_id": "ack", "extra": 1}"#, .badRequest, "unknown_field", "extra"),
                (#"{"action_id": 5}"#, .badRequest, "invalid_field", "action_id"),
            ]
            for (body, status, code, field) in cases {
                let response = try await report(client, id, body, as: owner)
                #expect(response.status == status, "\(body)")
                #expect(try response.json()["code"] == .string(code), "\(body)")
                #expect(try response.json()["field"] == .string(field), "\(body)")
            }
            #expect(try await poll(client, id, token).json()["status"] == "pending")

            // Another device, a wrong secret, an unknown id: 404 / 401.
            let stranger = try await client.register(token: Fixtures.apnsToken(2))
            #expect(try await report(client, id, #"{"action_id": "ack"}"#, as: stranger).status == .notFound)
            #expect(try await report(client, UUID().uuidString, #"{"action_id": "ack"}"#, as: owner).status == .notFound)
            let wrong = Registration(userID: owner.userID, secret: String(repeating: "0", count: 64))
            #expect(try await report(client, id, #"{"action_id": "ack"}"#, as: wrong).status.code >= 400)
            #expect(try await poll(client, id, token).json()["status"] == "pending")
        }
    }

    @Test func aTokenSeesOnlyTheAnswersOfWhatItSent() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let sender = try await client.createToken(for: owner, name: "sender")
            let other = try await client.createToken(for: owner, name: "other")
            let id = try await send(client, sender)
            #expect(try await poll(client, id, other).status == .notFound)
            #expect(try await poll(client, UUID().uuidString, sender).status == .notFound)
            #expect(try await poll(client, "not-a-uuid", sender).status == .notFound)
            // Not answerable (every action has a url or opens the app): 404 as well.
            let plain = try await send(client, sender, #"{"title": "T", "body": "B", "actions": [{"id": "o", "title": "O", "url": "https://x.example/"}]}"#)
            #expect(try await poll(client, plain, sender).status == .notFound)
            let strangerToken = try await client.createToken(for: try await client.register(token: Fixtures.apnsToken(3)))
            #expect(try await poll(client, id, strangerToken).status == .notFound)
            #expect(try await poll(client, id, sender).status == .ok)
        }
    }

    @Test func waitIsCheckedAndClamped() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let id = try await send(client, token)
            for wait in ["-1", "abc", "1.5"] {
                let response = try await poll(client, id, wait: wait, token)
                #expect(response.status == .badRequest, "\(wait)")
                #expect(try response.json()["field"] == "wait", "\(wait)")
            }
            // Unanswered, a wait is held to its end and answers pending.
            let held = try await poll(client, id, wait: "1", token)
            #expect(held.status == .ok)
            #expect(try held.json()["status"] == "pending")
            _ = try await report(client, id, #"{"action_id": "ack"}"#, as: owner)
            // Answered: any wait, however long, answers at once (a wait past 25 s is 25 s, not refused).
            for wait in ["0", "25", "26", "3600", "99999999999999999999999"] {
                let response = try await poll(client, id, wait: wait, token)
                #expect(response.status == .ok, "\(wait)")
                #expect(try response.json()["status"] == "answered", "\(wait)")
            }
            #expect(try AnswerPollController<HeraldRequestContext>.wait("26") == 25)
            #expect(try AnswerPollController<HeraldRequestContext>.wait("3") == 3)
            #expect(try AnswerPollController<HeraldRequestContext>.wait(nil) == 0)
        }
    }
}

/// The long poll's machinery without HTTP: waiters park without a thread, wake on the answer, at their time, on
/// cancellation, and from the store when another instance took the answer.
@Suite("Answer waiters")
struct AnswerWaiterTests {
    private func storeWithNotification() async throws -> (InMemoryStore, PushNotification.ID) {
        let store = InMemoryStore()
        let (device, _, _) = Fixtures.device()
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: "2025-11-22", maximum: nil))
        return (store, notification.id)
    }

    @Test func aParkedWaiterIsWokenByTheAnswer() async throws {
        let (store, id) = try await storeWithNotification()
        let waiters = AnswerWaiters(store: store)
        async let waited = waiters.wait(for: id, upTo: .seconds(600))
        #expect(await eventually { waiters.count == 1 })
        let answer = NotificationAnswer(notificationID: id, actionID: "ack", text: nil, answeredAt: Date(timeIntervalSince1970: 1))
        #expect(try await store.recordAnswer(answer) == .recorded)
        waiters.answered(id)
        #expect(try await waited == answer)
        #expect(waiters.count == 0)
    }

    @Test func manyWaitersOnOneNotificationAllWake() async throws {
        let (store, id) = try await storeWithNotification()
        let waiters = AnswerWaiters(store: store)
        try await withThrowingTaskGroup(of: NotificationAnswer?.self) { group in
            for _ in 0..<200 { group.addTask { try await waiters.wait(for: id, upTo: .seconds(600)) } }
            #expect(await eventually { waiters.count == 200 })
            _ = try await store.recordAnswer(NotificationAnswer(notificationID: id, actionID: "ack", text: nil, answeredAt: Date()))
            waiters.answered(id)
            var woken = 0
            for try await answer in group where answer?.actionID == "ack" { woken += 1 }
            #expect(woken == 200)
        }
    }

    @Test func aWaiterWithoutAnAnswerReturnsPendingAtItsTimeAndOnCancellation() async throws {
        let (store, id) = try await storeWithNotification()
        let waiters = AnswerWaiters(store: store)
        #expect(try await waiters.wait(for: id, upTo: .zero) == nil)
        #expect(try await waiters.wait(for: id, upTo: .milliseconds(10)) == nil)
        let task = Task { try await waiters.wait(for: id, upTo: .seconds(600)) }
        #expect(await eventually { waiters.count == 1 })
        task.cancel()
        #expect(try await task.value == nil)
        #expect(waiters.count == 0)
    }

    @Test func anAnswerAnotherInstanceTookIsFoundByPolling() async throws {
        let (store, id) = try await storeWithNotification()
        let waiters = AnswerWaiters(store: store, pollInterval: .milliseconds(20))
        let poller = Task { try await waiters.run() }
        async let waited = waiters.wait(for: id, upTo: .seconds(600))
        #expect(await eventually { waiters.count == 1 })
        // Recorded without telling these waiters, as another instance would.
        _ = try await store.recordAnswer(NotificationAnswer(notificationID: id, actionID: "elsewhere", text: nil, answeredAt: Date()))
        #expect(try await waited?.actionID == "elsewhere")
        poller.cancel()
    }
}

/// At graceful shutdown a held long poll answers at once with the answer's state then (pending here), instead of
/// holding the shutdown for its remaining wait. The waiter runs inside a service, as a request handler runs inside the
/// HTTP server's service.
@Suite("Answer waiters at shutdown")
struct AnswerWaiterShutdownTests {
    private struct Waiting: Service {
        let waiters: AnswerWaiters
        let id: PushNotification.ID
        let result: AsyncStream<NotificationAnswer?>.Continuation

        func run() async throws {
            result.yield(try await waiters.wait(for: id, upTo: .seconds(600)))
            result.finish()
            try? await gracefulShutdown()
        }
    }

    @Test(.timeLimit(.minutes(1))) func aHeldPollAnswersAtOnceAtShutdown() async throws {
        let store = InMemoryStore()
        let (device, _, _) = Fixtures.device()
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: "2025-11-22", maximum: nil))
        let waiters = AnswerWaiters(store: store)
        let (results, continuation) = AsyncStream.makeStream(of: NotificationAnswer?.self)
        let group = ServiceGroup(
            configuration: .init(services: [Waiting(waiters: waiters, id: notification.id, result: continuation)], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await eventually { waiters.count == 1 })
            await group.triggerGracefulShutdown()
            var iterator = results.makeAsyncIterator()
            let answer = await iterator.next()
            #expect(answer == .some(nil))  // answered, with "pending"
            try await tasks.waitForAll()
        }
        #expect(waiters.count == 0)
    }
}
