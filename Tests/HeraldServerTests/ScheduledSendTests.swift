import Foundation
import HeraldCore
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 39, section 5: `POST /notifications/scheduled` and friends over real HTTP, with a test clock.
@Suite("Scheduled sends")
struct ScheduledSendTests {
    static func server(dailyLimit: Int = 150) throws -> TestServer {
        var server = try TestServer(dailyLimit: dailyLimit, clock: TestClock(Date(timeIntervalSince1970: 1_780_000_000)))
        server.configuration.scheduledSendPollInterval = .milliseconds(20)
        return server
    }

    static let notification = #"{"title": "Water", "body": "Leak in the basement"}"#

    @Test func aOneTimeSendGoesOutWhenItsTimeComesAndReadsSent() async throws {
        let server = try Self.server()
        let clock = server.clock
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let sendAt = clock.now().addingTimeInterval(3_600).iso8601WithMilliseconds
            let created = try await client.post(
                "/notifications/scheduled", #"{"notification": \#(Self.notification), "send_at": "\#(sendAt)"}"#, headers: token.bearer)
            #expect(created.status == .created)
            let body = try created.json()
            #expect(body["status"] == "scheduled")
            #expect(body["next_send_at"] == .string(sendAt))
            let id = try #require(body["id"]?.stringValue)
            // Not yet due: nothing goes out.
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["status"] == "scheduled")
            clock.advance(by: 3_600)
            let sent = try await eventually {
                try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["status"] == "sent"
            }
            #expect(sent)
            let shown = try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()
            #expect(shown["sent_count"] == .int(1))
            #expect(shown["notification_id"]?.stringValue != nil)
            #expect(shown["next_send_at"] == .null)
        }
    }

    /// A scheduled notification is its token's as a `POST /notifications` one is: the token reads its answer; one with
    /// `push: false` is kept in the inbox, not pushed.
    @Test func aScheduledNotificationsAnswerIsReadByItsTokenAndPushFalseIsKeptOnly() async throws {
        let server = try Self.server()
        let clock = server.clock
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let sendAt = clock.now().addingTimeInterval(600).iso8601WithMilliseconds
            let answerable = #"{"title": "Leak", "body": "Basement", "actions": [{"id": "ack", "title": "On my way"}]}"#
            let kept = #"{"title": "Log", "body": "Nightly report", "push": false}"#
            var ids: [String] = []
            for notification in [answerable, kept] {
                let created = try await client.post(
                    "/notifications/scheduled", #"{"notification": \#(notification), "send_at": "\#(sendAt)"}"#, headers: token.bearer)
                #expect(created.status == .created)
                ids.append(try #require(try created.json()["id"]?.stringValue))
            }
            clock.advance(by: 600)
            var sent: [String] = []
            #expect(try await eventually {
                sent = []
                for id in ids {
                    let shown = try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()
                    sent.append(shown["notification_id"]?.stringValue ?? "")
                }
                return sent.allSatisfy { !$0.isEmpty }
            })
            let answered = try await client.post("/api/push/notifications/\(sent[0])/answer", #"{"action_id": "ack"}"#, headers: owner.basic)
            #expect(answered.status == .noContent)
            let poll = try await client.execute(uri: "/notifications/answers/\(sent[0])", method: .get, headers: token.bearer)
            #expect(poll.status == .ok)
            #expect(try poll.json()["action_id"] == "ack")
            let status = try await client.execute(uri: "/api/push/notifications/\(sent[1])", method: .get, headers: owner.basic).json()
            #expect(status["status"] == "stored", "\(status)")
        }
    }

    @Test func aRepeatingSendSkipsASendThatFindsTheQuotaUsedUp() async throws {
        let server = try Self.server(dailyLimit: 1)
        let clock = server.clock
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let created = try await client.post(
                "/notifications/scheduled",
                #"{"notification": \#(Self.notification), "recurrence": {"cron": "*/15 * * * *", "timezone": "UTC", "count": 5}}"#,
                headers: token.bearer)
            #expect(created.status == .created)
            let id = try #require(try created.json()["id"]?.stringValue)
            let first = try #require(try created.json()["next_send_at"]?.stringValue)
            clock.advance(by: 15 * 60)
            #expect(try await eventually {
                try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["sent_count"] == .int(1)
            })
            // The daily limit of 1 is used up: the next send is skipped, the schedule goes on.
            clock.advance(by: 15 * 60)
            #expect(try await eventually {
                try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["last_error"] == "quota_exceeded"
            })
            let shown = try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()
            #expect(shown["status"] == "scheduled")
            #expect(shown["sent_count"] == .int(1))
            #expect(shown["next_send_at"]?.stringValue != first)
        }
    }

    @Test func aOneTimeSendThatFindsTheQuotaUsedUpFails() async throws {
        let server = try Self.server(dailyLimit: 1)
        let clock = server.clock
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            #expect(try await client.sendAction(token.bearer).status == .created)
            let sendAt = clock.now().addingTimeInterval(60).iso8601WithMilliseconds
            let created = try await client.post(
                "/notifications/scheduled", #"{"notification": \#(Self.notification), "send_at": "\#(sendAt)"}"#, headers: token.bearer)
            let id = try #require(try created.json()["id"]?.stringValue)
            clock.advance(by: 60)
            #expect(try await eventually {
                try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["status"] == "failed"
            })
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["last_error"] == "quota_exceeded")
        }
    }

    @Test func rulesAre400NamingTheFieldAndTheTwentySixthIs409() async throws {
        let server = try Self.server()
        let clock = server.clock
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let soon = clock.now().addingTimeInterval(60).iso8601WithMilliseconds
            let tooFar = clock.now().addingTimeInterval(366 * 86_400).iso8601WithMilliseconds
            let past = clock.now().addingTimeInterval(-60).iso8601WithMilliseconds
            let cases: [(String, String)] = [
                (#"{"send_at": "\#(soon)"}"#, "notification"),
                (#"{"notification": {"body": "x"}, "send_at": "\#(soon)"}"#, "title"),
                (#"{"notification": \#(Self.notification)}"#, "send_at"),
                (#"{"notification": \#(Self.notification), "send_at": "tomorrow"}"#, "send_at"),
                (#"{"notification": \#(Self.notification), "send_at": "\#(past)"}"#, "send_at"),
                (#"{"notification": \#(Self.notification), "send_at": "\#(tooFar)"}"#, "send_at"),
                (#"{"notification": \#(Self.notification), "send_at": "\#(soon)", "extra": 1}"#, "extra"),
                (#"{"notification": {"title": "x", "body": "y", "callback_url": "https://hooks.example.com/"}, "send_at": "\#(soon)"}"#, "notification.callback_url"),
                (#"{"notification": \#(Self.notification), "send_at": "\#(soon)", "recurrence": {"cron": "0 7 * * *", "timezone": "UTC"}}"#, "recurrence"),
                (#"{"notification": \#(Self.notification), "recurrence": {"cron": "*/10 * * * *", "timezone": "UTC"}}"#, "recurrence.cron"),
                (#"{"notification": \#(Self.notification), "recurrence": {"cron": "0 7 * *", "timezone": "UTC"}}"#, "recurrence.cron"),
                (#"{"notification": \#(Self.notification), "recurrence": {"cron": "0 7 * * *", "timezone": "Mars/Olympus"}}"#, "recurrence.timezone"),
                (#"{"notification": \#(Self.notification), "recurrence": {"cron": "0 7 * * *", "timezone": "UTC", "count": 0}}"#, "recurrence.count"),
                (#"{"notification": \#(Self.notification), "recurrence": {"cron": "0 7 * * *", "timezone": "UTC", "until": "\#(past)"}}"#, "recurrence.until"),
            ]
            for (body, field) in cases {
                let response = try await client.post("/notifications/scheduled", body, headers: token.bearer)
                #expect(response.status == .badRequest, "\(body)")
                #expect(try response.json()["field"] == .string(field), "\(body): \(String(buffer: response.body))")
            }
            for index in 0..<25 {
                let at = clock.now().addingTimeInterval(Double(3_600 + index * 60)).iso8601WithMilliseconds
                let created = try await client.post(
                    "/notifications/scheduled", #"{"notification": \#(Self.notification), "send_at": "\#(at)"}"#, headers: token.bearer)
                #expect(created.status == .created)
            }
            let refused = try await client.post(
                "/notifications/scheduled", #"{"notification": \#(Self.notification), "send_at": "\#(soon)"}"#, headers: token.bearer)
            #expect(refused.status == .conflict)
            #expect(try refused.json()["code"] == "notification_schedule.limit_exceeded")
        }
    }

    @Test func aTokenSeesAndCancelsOnlyItsOwnAndACanceledOneReadsCanceledFor24Hours() async throws {
        let server = try Self.server()
        let clock = server.clock
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let other = try await client.createToken(for: try await client.register())
            let at = clock.now().addingTimeInterval(3_600).iso8601WithMilliseconds
            let body = #"{"notification": \#(Self.notification), "send_at": "\#(at)"}"#
            let id = try #require(try await client.post("/notifications/scheduled", body, headers: token.bearer).json()["id"]?.stringValue)
            let purged = try #require(try await client.post("/notifications/scheduled", body, headers: token.bearer).json()["id"]?.stringValue)
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: other.bearer).status == .notFound)
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .delete, headers: other.bearer).status == .notFound)
            guard case .array(let otherItems)? = try await client.execute(uri: "/notifications/scheduled", method: .get, headers: other.bearer).json()["items"] else {
                throw TestFailure("items is not an array")
            }
            #expect(otherItems.isEmpty)
            guard case .array(let items)? = try await client.execute(uri: "/notifications/scheduled", method: .get, headers: token.bearer).json()["items"] else {
                throw TestFailure("items is not an array")
            }
            #expect(items.count == 2)

            let canceled = try await client.execute(uri: "/notifications/scheduled/\(id)", method: .delete, headers: token.bearer)
            #expect(canceled.status == .ok)
            #expect(try canceled.json()["status"] == "canceled")
            #expect(try await client.execute(uri: "/notifications/scheduled/\(purged)?purge=true", method: .delete, headers: token.bearer).status == .noContent)
            #expect(try await client.execute(uri: "/notifications/scheduled/\(purged)", method: .get, headers: token.bearer).status == .notFound)
            // Past its time, a canceled send never goes out.
            clock.advance(by: 3_700)
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).json()["status"] == "canceled")
            clock.advance(by: 86_400)
            #expect(try await client.execute(uri: "/notifications/scheduled/\(id)", method: .get, headers: token.bearer).status == .notFound)
        }
    }
}
