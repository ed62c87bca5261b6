import Foundation
import HeraldCore

extension InMemoryStore {
    public func insertTopic(_ topic: Topic, creator: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        guard devices[creator.deviceID] != nil else { return .notFound }
        guard memberships(ofDevice: creator.deviceID) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
        topicRows[topic.id] = topic
        topicMemberRows[creator.id] = creator
        return .joined(creator)
    }

    public func topic(topicIDHash: String) async throws -> Topic? {
        topicRows.values.first { $0.topicIDHash == topicIDHash }
    }

    public func joinTopic(_ member: TopicMember, limits: TopicLimits) async throws -> TopicJoinOutcome {
        guard topicRows[member.topicID] != nil, devices[member.deviceID] != nil else { return .notFound }
        let members = topicMemberRows.values.filter { $0.topicID == member.topicID }
        if let existing = members.first(where: { $0.deviceID == member.deviceID }) { return .alreadyMember(existing) }
        guard members.count < limits.maximumMembers else { return .topicFull }
        guard memberships(ofDevice: member.deviceID) < limits.maximumTopicsPerDevice else { return .tooManyTopics }
        topicMemberRows[member.id] = member
        return .joined(member)
    }

    public func topicMembers(topicID: Topic.ID) async throws -> [TopicMember] {
        let creator = topicRows[topicID]?.creatorID
        return topicMemberRows.values.filter { $0.topicID == topicID }.sorted {
            ($0.deviceID == creator ? 0 : 1, $0.joinedAt, $0.id.uuidString) < ($1.deviceID == creator ? 0 : 1, $1.joinedAt, $1.id.uuidString)
        }
    }

    public func removeTopicMember(topicID: Topic.ID, memberID: TopicMember.ID) async throws -> TopicMember? {
        guard let member = topicMemberRows[memberID], member.topicID == topicID else { return nil }
        topicMemberRows[memberID] = nil
        return member
    }

    public func updateTopicJoinCode(topicID: Topic.ID, joinCodeHash: String) async throws -> Bool {
        guard topicRows[topicID] != nil else { return false }
        topicRows[topicID]?.joinCodeHash = joinCodeHash
        return true
    }

    public func deleteTopic(id: Topic.ID) async throws {
        topicRows[id] = nil
        topicMemberRows = topicMemberRows.filter { $0.value.topicID != id }
    }

    /// A deleted device's memberships go, and so do the topics it created (with their members).
    func removeTopics(ofDevice deviceID: Device.ID) {
        let created = Set(topicRows.values.filter { $0.creatorID == deviceID }.map(\.id))
        for id in created { topicRows[id] = nil }
        topicMemberRows = topicMemberRows.filter { $0.value.deviceID != deviceID && !created.contains($0.value.topicID) }
    }

    private func memberships(ofDevice deviceID: Device.ID) -> Int {
        topicMemberRows.values.count { $0.deviceID == deviceID }
    }
}
