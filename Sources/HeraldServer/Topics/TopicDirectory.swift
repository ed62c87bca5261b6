import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// Finds topics by their topic ids and their members' devices, for the topic API and for every send that names a topic
/// id instead of a USER_ID.
///
/// ```swift
/// if TopicID.accepts(target) {
///     let topic = try await topics.topic(sender: target, request: request, context: context)   // 404 unknown
///     let receipt = try await pipeline.send(draft, toMembers: try await topics.targets(of: topic))
/// }
/// ```
struct TopicDirectory: Sendable {
    let store: any DeviceStore & TopicStore
    let credentials: CredentialGuard
    var limits = TopicLimits()

    /// The 404 of an unknown topic id, and of a join code that does not match: the same answer, so that a wrong code
    /// says nothing about the topic.
    static let notFound = APIError.notFound("No topic matches this topic id (and join code).")

    /// The topic of a topic id, or `nil` when the text is not one or no topic has it.
    func lookUp(_ text: String) async throws -> Topic? {
        guard let id = TopicID(text) else { return nil }
        return try await storeCall { try await store.topic(topicIDHash: id.lookupHash) }
    }

    /// The topic a sender names; an unknown one is 404 and counts as a failed credential check, as an unknown USER_ID
    /// does.
    func topic(sender text: String, field: String, request: Request, context: some RemoteAddressRequestContext) async throws -> Topic {
        try await credentials.check(.topicID(text), of: request, context: context) {
            guard let topic = try await lookUp(text) else {
                var error = Self.notFound
                error.field = field
                throw error
            }
            return topic
        }
    }

    /// The topic's members with their devices, the creator first (a member whose device is gone is left out).
    func targets(of topic: Topic) async throws -> [FanoutTarget] {
        try await storeCall {
            var targets: [FanoutTarget] = []
            for member in try await store.topicMembers(topicID: topic.id) {
                if let device = try await store.device(id: member.deviceID) {
                    targets.append(FanoutTarget(memberID: member.id, device: device))
                }
            }
            return targets
        }
    }
}
