import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Sends that name a topic id instead of a USER_ID: one accept, one notification per member.
@Suite("Topic sends")
struct TopicSendTests {
    /// A topic of 50 APNs devices on SQLite: one send reaches the double 50 times, once per device token.
    @Test func aSendToFiftyMembersReachesEachDevice() async throws {
        var apns = try await APNsTestServer.start()
        apns.server.configuration.registrationsPerMinute = 0
        let production = apns.production
        try await apns.server.run { client in
            let creator = try await client.register(token: Fixtures.apnsToken(1))
            let topic = try await client.createTopic(by: creator)
            for index in 2...50 {
                let member = try await client.register(token: Fixtures.apnsToken(index))
                #expect(try await client.join(topic.topicID, code: topic.joinCode, as: member).status == .created)
            }
            let response = try await client.notify(topic.topicID, title: "Dinner", body: "Ready")
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["delivery"] == "all")
            let members = try #require(json["members"]?.elements)
            #expect(members.count == 50)
            #expect(members.allSatisfy { $0.objectValue?["delivery"] == "delivered" && $0.objectValue?["id"]?.stringValue != nil })
            let ids = Set(members.compactMap { $0.objectValue?["id"]?.stringValue })
            #expect(ids.count == 50)
            let pushes = production.acceptedPushes
            #expect(pushes.count == 50)
            #expect(Set(pushes.compactMap { $0.header("apns-id") }) == ids)
            #expect(Set(pushes.compactMap(\.deviceToken)) == Set((1...50).map { Fixtures.apnsToken($0) }))
            #expect(response.rateLimit == nil)  // each member has its own limit: the members say theirs
        }
        try await apns.shutdown()
    }

    /// The accept of a topic's send is bounded by the store's deadline as a single send's is: with SQLite's write lock
    /// held by another connection, the send is answered 503 `store_unavailable` (before the 10 s the store itself would
    /// wait for the lock), and once the lock is released nothing of it is written (its transaction gave up at its gate).
    @Test func aTopicSendMeetsTheStoresDeadlineAndWritesNothing() async throws {
        var server = try TestServer()
        server.configuration.storeTimeout = .seconds(1)
        let databasePath = server.databasePath
        try await server.run { client in
            let creator = try await client.register(token: Fixtures.apnsToken(1))
            let topic = try await client.createTopic(by: creator)
            let member = try await client.register(token: Fixtures.apnsToken(2))
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: member).status == .created)

            let lock = try RawSQLiteConnection(path: databasePath)
            try lock.execute("BEGIN IMMEDIATE")
            let refused = try await client.notify(topic.topicID, title: "Refused", body: "Locked")
            #expect(refused.status == .serviceUnavailable)
            #expect(try refused.json()["code"] == "store_unavailable")
            try lock.execute("ROLLBACK")
            // The store's one writer takes the given-up transaction first (it meets its gate and rolls back), then this
            // send's: once this is accepted, the file holds its two notifications and nothing of the other. With a 1 s
            // deadline a loaded machine may refuse it too (503, nothing stored): it is tried again.
            #expect(try await eventually(attempts: 20) {
                try await client.notify(topic.topicID, title: "Later", body: "Unlocked").status == .created
            })
            #expect(try lock.text("SELECT count(*) FROM notification") == "2")
            lock.close()
        }
    }

    /// A member over its daily limit is skipped and reported; the others get theirs (`partial`). When every member is
    /// over its limit, nothing is stored and the answer is the limit's 429 with the members.
    @Test func aMemberOverItsLimitIsSkippedAndReported() async throws {
        var apns = try await APNsTestServer.start(dailyLimit: 1)
        apns.server.configuration.registrationsPerMinute = 0
        let production = apns.production
        try await apns.server.run { client in
            let creator = try await client.register(token: Fixtures.apnsToken(1))
            let member = try await client.register(token: Fixtures.apnsToken(2))
            let topic = try await client.createTopic(by: creator)
            #expect(try await client.join(topic.topicID, code: topic.joinCode, as: member).status == .created)
            #expect(try await client.notify(member.userID).status == .created)  // the member's one of the day

            let response = try await client.notify(topic.topicID)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["delivery"] == "partial")
            let members = try #require(json["members"]?.elements).compactMap(\.objectValue)
            #expect(members.map { $0["member_id"]?.stringValue } == [topic.memberID, members[1]["member_id"]?.stringValue])
            #expect(members[0]["delivery"] == "delivered")
            #expect(members[1]["delivery"] == "skipped")
            #expect(members[1]["reason"] == "rate_limited")
            #expect(members[1]["id"] == nil)
            // The direct one only (and the notice that its quota is used up).
            let memberPushes = production.acceptedPushes.filter { $0.deviceToken == Fixtures.apnsToken(2) }
            #expect(memberPushes.filter { $0.header("apns-collapse-id") != "herald-rate-limit" }.count == 1)

            // Now both are over: nothing stored, 429 with every member's outcome.
            let none = try await client.notify(topic.topicID)
            #expect(none.status == .tooManyRequests)
            let refused = try none.json()
            #expect(refused["code"] == "rate_limited")
            #expect(refused["delivery"] == "none")
            #expect(try #require(refused["members"]?.elements).allSatisfy { $0.objectValue?["reason"] == "rate_limited" })
        }
        try await apns.shutdown()
    }

    /// An unknown topic id is 404 `not_found` naming `user_id`, as an unknown USER_ID is 404; a malformed one is 400.
    @Test func anUnknownTopicIsNotFound() async throws {
        try await TestServer().run { client in
            let unknown = try await client.notify(TopicID.random().text)
            #expect(unknown.status == .notFound)
            #expect(try unknown.json()["field"] == "user_id")
            #expect(try await client.notify("tp_" + String(repeating: "a", count: 59)).status == .badRequest)
            #expect(try await client.notify("tp_" + String(repeating: "g", count: 60)).status == .badRequest)
        }
    }
}
