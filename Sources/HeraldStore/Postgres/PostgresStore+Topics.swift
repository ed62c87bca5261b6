import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    /// Locks the creator's device row first (`FOR NO KEY UPDATE`): concurrent creates and joins of one device, from any
    /// instance, queue there, so the count of its topics holds.
    public func insertTopic(_ topic: Topic, creator: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        try await transaction { [self] connection in
            let device = try await execute("SELECT 1 FROM device WHERE id = \(creator.deviceID) FOR NO KEY UPDATE", on: connection)
            guard !device.isEmpty else { return .notFound }
            guard try await memberships(ofDevice: creator.deviceID, connection) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
            try await execute(
                """
                INSERT INTO topic (id, topic_id_hash, join_code_hash, creator_id, name, created_at)
                VALUES (\(topic.id), \(topic.topicIDHash), \(topic.joinCodeHash), \(topic.creatorID), \(topic.name),
                    \(topic.createdAt.timeIntervalSince1970))
                """, on: connection)
            try await insert(creator, connection)
            return .joined(creator)
        }
    }

    public func topic(topicIDHash: String) async throws -> Topic? {
        try await read("SELECT \(unescaped: Self.topicColumns) FROM topic WHERE topic_id_hash = \(topicIDHash)").first.map(Self.topic)
    }

    /// Locks the topic's row, then the device's: joins of one topic queue for its member count, joins and creates of
    /// one device for its topic count (always in that order, so two never wait for each other).
    public func joinTopic(_ member: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        try await transaction { [self] connection in
            let topic = try await execute("SELECT 1 FROM topic WHERE id = \(member.topicID) FOR NO KEY UPDATE", on: connection)
            let device = try await execute("SELECT 1 FROM device WHERE id = \(member.deviceID) FOR NO KEY UPDATE", on: connection)
            guard !topic.isEmpty, !device.isEmpty else { return .notFound }
            let existing = try await execute(
                "SELECT \(unescaped: Self.memberColumns) FROM topic_member WHERE topic_id = \(member.topicID) AND device_id = \(member.deviceID)",
                on: connection)
            if let row = existing.first { return .alreadyMember(try Self.member(row)) }
            let count = try await execute("SELECT count(*) FROM topic_member WHERE topic_id = \(member.topicID)", on: connection)
            guard try (count.first?.decode(Int.self) ?? 0) < limits.maximumMembers else { return .topicFull }
            guard try await memberships(ofDevice: member.deviceID, connection) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
            try await insert(member, connection)
            return .joined(member)
        }
    }

    public func topicMembers(topicID: Topic.ID) async throws -> [TopicMember] {
        try await read(
            """
            SELECT m.id, m.topic_id, m.device_id, m.name, m.joined_at FROM topic_member m JOIN topic t ON t.id = m.topic_id
            WHERE m.topic_id = \(topicID) ORDER BY (m.device_id = t.creator_id) DESC, m.joined_at, m.id
            """
        ).map(Self.member)
    }

    public func removeTopicMember(topicID: Topic.ID, memberID: TopicMember.ID) async throws -> TopicMember? {
        try await write(
            "DELETE FROM topic_member WHERE id = \(memberID) AND topic_id = \(topicID) RETURNING \(unescaped: Self.memberColumns)"
        ).first.map(Self.member)
    }

    public func updateTopicJoinCode(topicID: Topic.ID, joinCodeHash: String) async throws -> Bool {
        !(try await write("UPDATE topic SET join_code_hash = \(joinCodeHash) WHERE id = \(topicID) RETURNING id").isEmpty)
    }

    public func deleteTopic(id: Topic.ID) async throws {
        try await write("DELETE FROM topic WHERE id = \(id)")
    }

    // MARK: Rows

    private func memberships(ofDevice deviceID: Device.ID, _ connection: PostgresConnection) async throws -> Int {
        let rows = try await execute("SELECT count(*) FROM topic_member WHERE device_id = \(deviceID)", on: connection)
        return try rows.first?.decode(Int.self) ?? 0
    }

    private func insert(_ member: TopicMember, _ connection: PostgresConnection) async throws {
        try await execute(
            """
            INSERT INTO topic_member (id, topic_id, device_id, name, joined_at)
            VALUES (\(member.id), \(member.topicID), \(member.deviceID), \(member.name), \(member.joinedAt.timeIntervalSince1970))
            """, on: connection)
    }

    private static let topicColumns = "id, topic_id_hash, join_code_hash, creator_id, name, created_at"
    private static let memberColumns = "id, topic_id, device_id, name, joined_at"

    private static func topic(_ row: PostgresRow) throws -> Topic {
        let row = row.makeRandomAccess()
        return Topic(
            id: try row.value("id"), topicIDHash: try row.value("topic_id_hash"), joinCodeHash: try row.value("join_code_hash"),
            creatorID: try row.value("creator_id"), name: try row.value("name"), createdAt: try row.date("created_at"))
    }

    private static func member(_ row: PostgresRow) throws -> TopicMember {
        let row = row.makeRandomAccess()
        return TopicMember(
            id: try row.value("id"), topicID: try row.value("topic_id"), deviceID: try row.value("device_id"),
            name: try row.value("name"), joinedAt: try row.date("joined_at"))
    }
}
