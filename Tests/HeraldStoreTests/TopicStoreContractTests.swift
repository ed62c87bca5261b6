import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

private func newTopic(creator: Device) -> (Topic, TopicMember) {
    let topic = Topic(
        topicIDHash: TopicID.random().lookupHash, joinCodeHash: TopicJoinCode.hash(TopicJoinCode.random()), creatorID: creator.id,
        name: "Family", createdAt: start)
    return (topic, TopicMember(topicID: topic.id, deviceID: creator.id, name: "phone", joinedAt: start))
}

private func member(of topic: Topic, _ device: Device, at offset: TimeInterval = 1) -> TopicMember {
    TopicMember(topicID: topic.id, deviceID: device.id, name: nil, joinedAt: start.addingTimeInterval(offset))
}

private func devices(_ count: Int, in store: any HeraldStore) async throws -> [Device] {
    var devices: [Device] = []
    for index in 0..<count {
        let device = Fixtures.device(token: Fixtures.apnsToken(index + 1)).device
        try await store.insertDevice(device)
        devices.append(device)
    }
    return devices
}

@Suite("Topic store contract")
struct TopicStoreContractTests {
    @Test(arguments: Backend.available)
    func createsFindsJoinsAndListsInJoiningOrder(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let all = try await devices(3, in: store)
        let (topic, creator) = newTopic(creator: all[0])
        #expect(try await store.insertTopic(topic, creator: creator, limits: TopicLimits()) == .joined(creator))
        #expect(try await store.topic(topicIDHash: topic.topicIDHash) == topic)
        #expect(try await store.topic(topicIDHash: TopicID.random().lookupHash) == nil)
        let second = member(of: topic, all[1], at: 2)
        let third = member(of: topic, all[2], at: 1)
        #expect(try await store.joinTopic(second, limits: TopicLimits()) == .joined(second))
        #expect(try await store.joinTopic(third, limits: TopicLimits()) == .joined(third))
        // Joining again changes nothing and answers the membership it has.
        #expect(try await store.joinTopic(member(of: topic, all[1], at: 9), limits: TopicLimits()) == .alreadyMember(second))
        #expect(try await store.topicMembers(topicID: topic.id) == [creator, third, second])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func enforcesMembersPerTopicAndTopicsPerDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let all = try await devices(4, in: store)
        let limits = TopicLimits(maximumMembers: 3, maximumTopicsPerDevice: 2)
        let (topic, creator) = newTopic(creator: all[0])
        #expect(try await store.insertTopic(topic, creator: creator, limits: limits) == .joined(creator))
        #expect(try await store.joinTopic(member(of: topic, all[1]), limits: limits) != .topicFull)
        let third = member(of: topic, all[2])
        #expect(try await store.joinTopic(third, limits: limits) == .joined(third))  // the 3rd of 3
        #expect(try await store.joinTopic(member(of: topic, all[3]), limits: limits) == .topicFull)  // the 4th
        #expect(try await store.topicMembers(topicID: topic.id).count == 3)

        let (other, otherCreator) = newTopic(creator: all[0])
        #expect(try await store.insertTopic(other, creator: otherCreator, limits: limits) == .joined(otherCreator))  // 2nd of 2
        let (third3, thirdCreator) = newTopic(creator: all[0])
        #expect(try await store.insertTopic(third3, creator: thirdCreator, limits: limits) == .tooManyTopics)
        #expect(try await store.topic(topicIDHash: third3.topicIDHash) == nil)
        // all[1] is in one topic; joining a second is allowed, a third is not.
        #expect(try await store.joinTopic(member(of: other, all[1]), limits: limits) != .tooManyTopics)
        let (fourth, fourthCreator) = newTopic(creator: all[3])
        #expect(try await store.insertTopic(fourth, creator: fourthCreator, limits: limits) == .joined(fourthCreator))
        #expect(try await store.joinTopic(member(of: fourth, all[1]), limits: limits) == .tooManyTopics)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func removesMembersRotatesCodesAndDeletesTopics(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let all = try await devices(2, in: store)
        let (topic, creator) = newTopic(creator: all[0])
        _ = try await store.insertTopic(topic, creator: creator, limits: TopicLimits())
        let joined = member(of: topic, all[1])
        _ = try await store.joinTopic(joined, limits: TopicLimits())
        #expect(try await store.removeTopicMember(topicID: topic.id, memberID: joined.id) == joined)
        #expect(try await store.removeTopicMember(topicID: topic.id, memberID: joined.id) == nil)
        #expect(try await store.removeTopicMember(topicID: UUID(), memberID: creator.id) == nil)
        #expect(try await store.topicMembers(topicID: topic.id) == [creator])

        #expect(try await store.updateTopicJoinCode(topicID: topic.id, joinCodeHash: "new"))
        #expect(try await store.topic(topicIDHash: topic.topicIDHash)?.joinCodeHash == "new")
        #expect(try await !store.updateTopicJoinCode(topicID: UUID(), joinCodeHash: "x"))

        try await store.deleteTopic(id: topic.id)
        #expect(try await store.topic(topicIDHash: topic.topicIDHash) == nil)
        #expect(try await store.topicMembers(topicID: topic.id).isEmpty)
        #expect(try await store.joinTopic(member(of: topic, all[1]), limits: TopicLimits()) == .notFound)
        try await store.close()
    }

    /// Deleting a device removes its memberships and the topics it created, with their members.
    @Test(arguments: Backend.available)
    func aDeletedDeviceTakesItsMembershipsAndTopicsAlong(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let all = try await devices(3, in: store)
        let (created, creator) = newTopic(creator: all[0])
        _ = try await store.insertTopic(created, creator: creator, limits: TopicLimits())
        _ = try await store.joinTopic(member(of: created, all[1]), limits: TopicLimits())
        let (joined, otherCreator) = newTopic(creator: all[2])
        _ = try await store.insertTopic(joined, creator: otherCreator, limits: TopicLimits())
        _ = try await store.joinTopic(member(of: joined, all[0]), limits: TopicLimits())

        try await store.deleteDevice(id: all[0].id)
        #expect(try await store.topic(topicIDHash: created.topicIDHash) == nil)
        #expect(try await store.topicMembers(topicID: created.id).isEmpty)
        #expect(try await store.topicMembers(topicID: joined.id) == [otherCreator])
        // all[1] is free to be in as many topics as before.
        let (again, againCreator) = newTopic(creator: all[1])
        #expect(try await store.insertTopic(again, creator: againCreator, limits: TopicLimits(maximumTopicsPerDevice: 1)) == .joined(againCreator))
        try await store.close()
    }

    /// A topic's send is one commit of several accepts: each against its own device's quota, one over its limit
    /// refused without refusing the others, all stored together.
    @Test(arguments: Backend.available)
    func oneCommitAcceptsEachMemberAgainstItsOwnLimit(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let all = try await devices(3, in: store)
        let day = "2025-11-22"
        _ = try await store.accept(Fixtures.notification(for: all[1], quotaDay: day), quota: QuotaRequest(day: day, maximum: 1))
        let notifications = all.map { Fixtures.notification(for: $0, quotaDay: day) }
        let decisions = try await store.commit(
            WriteBatch(accepts: notifications.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: day, maximum: 1)) }, owner: ""))
        #expect(decisions.count == 3)
        guard case .accepted = decisions[0], case .quotaExceeded = decisions[1], case .accepted = decisions[2] else {
            Issue.record("decisions: \(decisions)")
            return
        }
        #expect(try await store.notification(id: notifications[0].id) != nil)
        #expect(try await store.notification(id: notifications[1].id) == nil)
        #expect(try await store.notification(id: notifications[2].id) != nil)
        try await store.close()
    }
}
