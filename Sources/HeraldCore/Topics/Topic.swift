import Foundation

/// A topic: a name several devices share, so that one send reaches each of them (issue 42). A device creates it with
/// its own credentials and is its first member; other devices join with the join code.
///
/// The topic id (``TopicID``) is a bearer secret like a USER_ID (anyone who has it can send to every member), and the
/// join code a second one (with the topic id, it lets a device join); the store keeps only their SHA-256 hashes.
public struct Topic: Sendable, Equatable, Identifiable {
    public var id: UUID
    /// ``TopicID/lookupHash`` of the topic id.
    public var topicIDHash: String
    /// SHA-256 (lowercase hex) of the join code's normal form (``TopicJoinCode``).
    public var joinCodeHash: String
    /// The device that created it: the one that lists and removes members and rotates the join code.
    public var creatorID: Device.ID
    /// The creator's label for it (at most 64 characters), shown to members.
    public var name: String?
    public var createdAt: Date

    public init(
        id: UUID = .random(), topicIDHash: String, joinCodeHash: String, creatorID: Device.ID, name: String?, createdAt: Date
    ) {
        self.id = id
        self.topicIDHash = topicIDHash
        self.joinCodeHash = joinCodeHash
        self.creatorID = creatorID
        self.name = name
        self.createdAt = createdAt
    }
}

/// One device's membership of a topic.
public struct TopicMember: Sendable, Equatable, Identifiable {
    /// The membership's own id (`member_id` in the API): it names the member without its USER_ID, which is a secret.
    public var id: UUID
    public var topicID: Topic.ID
    public var deviceID: Device.ID
    /// The member's label for itself (at most 64 characters), so that the creator can tell members apart.
    public var name: String?
    public var joinedAt: Date

    public init(id: UUID = .random(), topicID: Topic.ID, deviceID: Device.ID, name: String?, joinedAt: Date) {
        self.id = id
        self.topicID = topicID
        self.deviceID = deviceID
        self.name = name
        self.joinedAt = joinedAt
    }
}

/// What the store did with a topic to create or a device to add.
public enum TopicJoinOutcome: Sendable, Equatable {
    /// Stored.
    case joined(TopicMember)
    /// The device was a member already: its membership as it was (joining twice changes nothing).
    case alreadyMember(TopicMember)
    /// Not stored: the topic has ``TopicLimits/maximumMembers`` members.
    case topicFull
    /// Not stored: the device is a member of ``TopicLimits/maximumTopicsPerDevice`` topics.
    case tooManyTopics
    /// Not stored: the topic (or the device) is gone.
    case notFound
}

/// The limits on topics, one place for the rule and its number.
public struct TopicLimits: Sendable, Equatable {
    /// Members of one topic, its creator included.
    public var maximumMembers: Int
    /// Topics one device is a member of, those it created included.
    public var maximumTopicsPerDevice: Int

    public init(maximumMembers: Int = 50, maximumTopicsPerDevice: Int = 20) {
        self.maximumMembers = maximumMembers
        self.maximumTopicsPerDevice = maximumTopicsPerDevice
    }
}

/// Topics and their members. A topic disappears with the device that created it, a membership with its device or
/// its topic.
public protocol TopicStore: Sendable {
    /// Atomically: stores `topic` and `creator` (its first member) unless the creator is a member of `limits`'
    /// ``TopicLimits/maximumTopicsPerDevice`` topics already (``TopicJoinOutcome/tooManyTopics``).
    func insertTopic(_ topic: Topic, creator: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome
    /// The topic whose topic id hashes to `topicIDHash`.
    func topic(topicIDHash: String) async throws -> Topic?
    /// Atomically: adds `member` unless it is a member already, the topic is full or the device is in too many topics.
    func joinTopic(_ member: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome
    /// The members of a topic: the creator first, then in the order they joined (members that joined at the same
    /// instant by their membership id).
    func topicMembers(topicID: Topic.ID) async throws -> [TopicMember]
    /// Removes one membership; returns it, or `nil` when there was none.
    func removeTopicMember(topicID: Topic.ID, memberID: TopicMember.ID) async throws -> TopicMember?
    /// Replaces the topic's join code hash; `false` when the topic is gone.
    func updateTopicJoinCode(topicID: Topic.ID, joinCodeHash: String) async throws -> Bool
    /// Removes a topic and its memberships.
    func deleteTopic(id: Topic.ID) async throws
}
