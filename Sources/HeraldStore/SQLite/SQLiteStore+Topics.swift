import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Migration v20. A topic goes with the device that created it, a membership with its device or its topic
    /// (`ON DELETE CASCADE`).
    static let topicSchema = """
        CREATE TABLE topic (
            id TEXT PRIMARY KEY NOT NULL,
            topic_id_hash TEXT NOT NULL UNIQUE,
            join_code_hash TEXT NOT NULL,
            creator_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            name TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX topic_creator ON topic (creator_id);
        CREATE TABLE topic_member (
            id TEXT PRIMARY KEY NOT NULL,
            topic_id TEXT NOT NULL REFERENCES topic(id) ON DELETE CASCADE,
            device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
            name TEXT,
            joined_at REAL NOT NULL,
            UNIQUE (topic_id, device_id)
        );
        CREATE INDEX topic_member_device ON topic_member (device_id);
        """

    public func insertTopic(_ topic: Topic, creator: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [creator.deviceID.databaseString]) != nil else {
                return .notFound
            }
            guard try Self.memberships(ofDevice: creator.deviceID, db) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
            try db.execute(
                sql: "INSERT INTO topic (id, topic_id_hash, join_code_hash, creator_id, name, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    topic.id.databaseString, topic.topicIDHash, topic.joinCodeHash, topic.creatorID.databaseString, topic.name,
                    topic.createdAt.timeIntervalSince1970,
                ])
            try Self.insert(creator, db)
            return .joined(creator)
        }
    }

    public func topic(topicIDHash: String) async throws -> Topic? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM topic WHERE topic_id_hash = ?", arguments: [topicIDHash]).map(Self.topic)
        }
    }

    public func joinTopic(_ member: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        try await write { db in
            let topicID = member.topicID.databaseString
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM topic WHERE id = ?", arguments: [topicID]) != nil,
                try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [member.deviceID.databaseString]) != nil
            else { return .notFound }
            if let existing = try Row.fetchOne(
                db, sql: "SELECT * FROM topic_member WHERE topic_id = ? AND device_id = ?",
                arguments: [topicID, member.deviceID.databaseString])
            {
                return .alreadyMember(try Self.member(existing))
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM topic_member WHERE topic_id = ?", arguments: [topicID]) ?? 0
            guard count < limits.maximumMembers else { return .topicFull }
            guard try Self.memberships(ofDevice: member.deviceID, db) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
            try Self.insert(member, db)
            return .joined(member)
        }
    }

    public func topicMembers(topicID: Topic.ID) async throws -> [TopicMember] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT m.* FROM topic_member m JOIN topic t ON t.id = m.topic_id WHERE m.topic_id = ?
                    ORDER BY m.device_id = t.creator_id DESC, m.joined_at, m.id
                    """, arguments: [topicID.databaseString]
            ).map(Self.member)
        }
    }

    public func removeTopicMember(topicID: Topic.ID, memberID: TopicMember.ID) async throws -> TopicMember? {
        try await write { db in
            let arguments: StatementArguments = [memberID.databaseString, topicID.databaseString]
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM topic_member WHERE id = ? AND topic_id = ?", arguments: arguments) else {
                return nil
            }
            try db.execute(sql: "DELETE FROM topic_member WHERE id = ? AND topic_id = ?", arguments: arguments)
            return try Self.member(row)
        }
    }

    public func updateTopicJoinCode(topicID: Topic.ID, joinCodeHash: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "UPDATE topic SET join_code_hash = ? WHERE id = ?", arguments: [joinCodeHash, topicID.databaseString])
            return db.changesCount > 0
        }
    }

    public func deleteTopic(id: Topic.ID) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM topic WHERE id = ?", arguments: [id.databaseString]) }
    }

    private static func memberships(ofDevice deviceID: Device.ID, _ db: GRDB.Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM topic_member WHERE device_id = ?", arguments: [deviceID.databaseString]) ?? 0
    }

    private static func insert(_ member: TopicMember, _ db: GRDB.Database) throws {
        try db.execute(
            sql: "INSERT INTO topic_member (id, topic_id, device_id, name, joined_at) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                member.id.databaseString, member.topicID.databaseString, member.deviceID.databaseString, member.name,
                member.joinedAt.timeIntervalSince1970,
            ])
    }

    private static func uuid(_ row: Row, _ column: String) throws -> UUID {
        guard let text: String = row[column], let id = UUID(uuidString: text) else { throw CorruptTopicRow(detail: "bad \(column)") }
        return id
    }

    private static func topic(_ row: Row) throws -> Topic {
        Topic(
            id: try uuid(row, "id"), topicIDHash: row["topic_id_hash"], joinCodeHash: row["join_code_hash"],
            creatorID: try uuid(row, "creator_id"), name: row["name"], createdAt: Date(timeIntervalSince1970: row["created_at"]))
    }

    private static func member(_ row: Row) throws -> TopicMember {
        TopicMember(
            id: try uuid(row, "id"), topicID: try uuid(row, "topic_id"), deviceID: try uuid(row, "device_id"), name: row["name"],
            joinedAt: Date(timeIntervalSince1970: row["joined_at"]))
    }
}

/// A topic row the store cannot read.
struct CorruptTopicRow: Error, CustomStringConvertible {
    var detail: String
    var description: String { "corrupt topic row: \(detail)" }
}
