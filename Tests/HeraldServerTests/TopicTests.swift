import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// A topic as `POST /api/push/topics` returned it.
struct CreatedTopic: Sendable {
    var topicID: String
    var joinCode: String
    var memberID: String
}

extension TestClientProtocol {
    func createTopic(by owner: Registration, body: String = #"{"name": "Family"}"#) async throws -> CreatedTopic {
        let response = try await post("/api/push/topics", body, headers: owner.basic)
        #expect(response.status == .created)
        let json = try response.json()
        return CreatedTopic(
            topicID: try #require(json["topic_id"]?.stringValue), joinCode: try #require(json["join_code"]?.stringValue),
            memberID: try #require(json["member_id"]?.stringValue))
    }

    func join(_ topicID: String, code: String, as owner: Registration, name: String? = nil) async throws -> TestResponse {
        let nameMember = name.map { #", "name": "\#($0)""# } ?? ""
        return try await post("/api/push/topics/\(topicID)/members", #"{"join_code": "\#(code)"\#(nameMember)}"#, headers: owner.basic)
    }

    func showTopic(_ topicID: String, as owner: Registration) async throws -> TestResponse {
        try await execute(uri: "/api/push/topics/\(topicID)", method: .get, headers: owner.basic)
    }
}

@Suite("Topics")
struct TopicTests {
    @Test func createJoinShowRotateRemoveAndLeave() async throws {
        var server = try TestServer()
        server.configuration.registrationsPerMinute = 0
        try await server.run { client in
            let creator = try await client.register(token: Fixtures.apnsToken(1))
            let phone = try await client.register(token: Fixtures.apnsToken(2))
            let tablet = try await client.register(token: Fixtures.apnsToken(3))

            let created = try await client.post("/api/push/topics", #"{"name": "Family", "member_name": "Mac"}"#, headers: creator.basic)
            #expect(created.status == .created)
            #expect(created.headers[.cacheControl] == "no-store")
            let json = try created.json()
            let topicID = try #require(json["topic_id"]?.stringValue)
            let code = try #require(json["join_code"]?.stringValue)
            #expect(topicID.hasPrefix("tp_") && topicID.count == 63 && TopicID.accepts(topicID) && !UserIDRule.accepts(topicID))
            #expect(TopicJoinCode.normalized(code) != nil)
            #expect(json["name"] == "Family")
            #expect(json["is_creator"] == true)
            #expect(json["member_count"] == 1)

            // Joining: 201, again 200; the code in any case and without dashes.
            let joined = try await client.join(topicID, code: code.uppercased(), as: phone, name: "Phone")
            #expect(joined.status == .created)
            let phoneMember = try #require(try joined.json()["member_id"]?.stringValue)
            #expect(try joined.json()["members"] == nil)  // only the creator sees the members
            #expect(try await client.join(topicID, code: code.replacingOccurrences(of: "-", with: ""), as: phone).status == .ok)

            // A wrong code and an unknown topic are the same 404.
            let wrong = try await client.join(topicID, code: TopicJoinCode.random(), as: tablet)
            let unknown = try await client.join(TopicID.random().text, code: code, as: tablet)
            #expect(wrong.status == .notFound && unknown.status == .notFound)
            #expect(try wrong.json() == unknown.json())
            #expect(try await client.showTopic(topicID, as: tablet).status == .notFound)  // not a member

            // The creator lists the members, oldest first.
            let shown = try await client.showTopic(topicID, as: creator).json()
            let members = try #require(shown["members"]?.elements)
            #expect(members.map { $0.objectValue?["name"] } == ["Mac", "Phone"])
            #expect(members.map { $0.objectValue?["platform"] } == ["apns", "apns"])
            #expect(try await client.showTopic(topicID, as: phone).json()["members"] == nil)

            // Rotating: only the creator; the old code stops working.
            #expect(try await client.post("/api/push/topics/\(topicID)/join_code", "{}", headers: phone.basic).status == .forbidden)
            let rotated = try await client.post("/api/push/topics/\(topicID)/join_code", "{}", headers: creator.basic)
            #expect(rotated.status == .ok)
            let newCode = try #require(try rotated.json()["join_code"]?.stringValue)
            #expect(try await client.join(topicID, code: code, as: tablet).status == .notFound)
            #expect(try await client.join(topicID, code: newCode, as: tablet).status == .created)

            // A member cannot remove another; the creator can; a member leaves with `me`; the creator cannot leave.
            let tabletMember = try #require(try await client.showTopic(topicID, as: tablet).json()["member_id"]?.stringValue)
            let path = "/api/push/topics/\(topicID)/members/"
            #expect(try await client.execute(uri: path + phoneMember, method: .delete, headers: tablet.basic).status == .forbidden)
            #expect(try await client.execute(uri: path + tabletMember, method: .delete, headers: creator.basic).status == .noContent)
            #expect(try await client.execute(uri: path + "me", method: .delete, headers: phone.basic).status == .noContent)
            #expect(try await client.showTopic(topicID, as: phone).status == .notFound)
            let creatorLeaves = try await client.execute(uri: path + "me", method: .delete, headers: creator.basic)
            #expect(creatorLeaves.status == .badRequest)
            #expect(try creatorLeaves.json()["field"] == "member_id")
            #expect(try await client.execute(uri: path + "not-a-uuid", method: .delete, headers: creator.basic).status == .notFound)

            // Deleting: only the creator.
            #expect(try await client.execute(uri: "/api/push/topics/\(topicID)", method: .delete, headers: creator.basic).status == .noContent)
            #expect(try await client.showTopic(topicID, as: creator).status == .notFound)
        }
    }

    @Test func refusesBadInputNamingTheField() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            #expect(try await client.post("/api/push/topics", "{}").status == .unauthorized)
            let long = try await client.post("/api/push/topics", #"{"name": "\#(String(repeating: "x", count: 65))"}"#, headers: owner.basic)
            #expect(long.status == .badRequest)
            #expect(try long.json()["field"] == "name")
            #expect(try await client.post("/api/push/topics", #"{"name": "\#(String(repeating: "é", count: 64))"}"#, headers: owner.basic).status == .created)
            let control = try await client.post("/api/push/topics", #"{"member_name": "a\u0007b"}"#, headers: owner.basic)
            #expect(try control.json()["field"] == "member_name")
            #expect(try await client.post("/api/push/topics", "", headers: owner.basic).status == .created)
            #expect(try await client.execute(uri: "/api/push/topics", method: .post, headers: owner.basic).status == .created)
            #expect(try await client.post("/api/push/topics", "[1]", headers: owner.basic).status == .badRequest)
            let topic = try await client.createTopic(by: owner)
            let missing = try await client.post("/api/push/topics/\(topic.topicID)/members", "{}", headers: owner.basic)
            #expect(missing.status == .badRequest)
            #expect(try missing.json()["field"] == "join_code")
            let number = try await client.post("/api/push/topics/\(topic.topicID)/members", #"{"join_code": 1e400}"#, headers: owner.basic)
            #expect(number.status == .badRequest)
            let notString = try await client.post("/api/push/topics/\(topic.topicID)/members", #"{"join_code": 12345}"#, headers: owner.basic)
            #expect(try notString.json()["field"] == "join_code")
            let huge = String(repeating: "a", count: 10_000)
            #expect(try await client.join(topic.topicID, code: huge, as: owner).status == .notFound)
            #expect(try await client.join(huge, code: topic.joinCode, as: owner).status == .notFound)
        }
    }

    /// 50 members per topic (the 51st is refused), 20 topics per device (the 21st is refused), each with the rule named.
    @Test func limitsMembersPerTopicAndTopicsPerDevice() async throws {
        var server = try TestServer()
        server.configuration.registrationsPerMinute = 0
        try await server.run { client in
            let creator = try await client.register(token: Fixtures.apnsToken(1))
            let topic = try await client.createTopic(by: creator)
            for index in 2...50 {
                let member = try await client.register(token: Fixtures.apnsToken(index))
                #expect(try await client.join(topic.topicID, code: topic.joinCode, as: member).status == .created, "member \(index)")
            }
            #expect(try await client.showTopic(topic.topicID, as: creator).json()["member_count"] == 50)
            let late = try await client.register(token: Fixtures.apnsToken(51))
            let full = try await client.join(topic.topicID, code: topic.joinCode, as: late)
            #expect(full.status == .conflict)
            #expect(try full.json()["code"] == "topic_full")
            #expect(try full.json()["limit"] == 50)

            // `late` is in no topic: it may create 20, not 21, nor join one more.
            for index in 1...20 {
                #expect(try await client.post("/api/push/topics", "{}", headers: late.basic).status == .created, "topic \(index)")
            }
            let tooMany = try await client.post("/api/push/topics", "{}", headers: late.basic)
            #expect(tooMany.status == .conflict)
            #expect(try tooMany.json()["code"] == "too_many_topics")
            #expect(try tooMany.json()["limit"] == 20)
            let other = try await client.createTopic(by: try await client.register(token: Fixtures.apnsToken(52)))
            #expect(try await client.join(other.topicID, code: other.joinCode, as: late).json()["code"] == "too_many_topics")
        }
    }
}

extension JSONValue {
    /// The elements of an array (tests only).
    var elements: [JSONValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }
}
