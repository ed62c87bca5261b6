import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Logging
import NIOCore

/// Topics (issue 42, docs/api.md "Topics"), each request with the device owner's credentials (HTTP Basic
/// `user_id:device_secret`):
///
/// - `POST /api/push/topics` creates one: the topic id (`tp_…`, the send target) and the join code, in this answer;
/// - `POST /api/push/topics/{topic_id}/members` joins with the join code (`{"join_code", "name"?}`);
/// - `DELETE /api/push/topics/{topic_id}/members/{member_id|me}` leaves, or (the creator) removes a member;
/// - `GET /api/push/topics/{topic_id}` shows it to a member (the creator also sees the members);
/// - `POST /api/push/topics/{topic_id}/join_code` (the creator) rotates the join code;
/// - `DELETE /api/push/topics/{topic_id}` (the creator) deletes it.
///
/// An unknown topic id, a wrong join code and a topic the device is not a member of are all the same 404, and count
/// as failed credential checks.
struct TopicController<Context: RemoteAddressRequestContext>: Sendable {
    let topics: TopicDirectory
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let clock: any WallClock
    let bodyLimit: Int

    private var store: any DeviceStore & TopicStore { topics.store }

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("topics", use: create)
        group.get("topics/{topic}", use: show)
        group.delete("topics/{topic}", use: delete)
        group.post("topics/{topic}/members", use: join)
        group.delete("topics/{topic}/members/{member}", use: remove)
        group.post("topics/{topic}/join_code", use: rotate)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let fields = FieldReader(try await optionalBody(request))
        let name = try TopicNameRule.validated(try fields.optionalString("name"), field: "name")
        let memberName = try TopicNameRule.validated(try fields.optionalString("member_name"), field: "member_name")
        let now = clock.now()
        let topicID = TopicID.random()
        let joinCode = TopicJoinCode.random()
        let topic = Topic(
            topicIDHash: topicID.lookupHash, joinCodeHash: TopicJoinCode.hash(joinCode), creatorID: device.id, name: name, createdAt: now)
        let creator = TopicMember(topicID: topic.id, deviceID: device.id, name: memberName, joinedAt: now)
        let outcome = try await storeCall { try await store.insertTopic(topic, creator: creator, limits: topics.limits) }
        try refusal(of: outcome)
        credentials.limiter.remember(.topicID(topicID.text))
        context.logger.info("Topic created", metadata: ["device": "\(device.id)", "topic": "\(topic.id)"])
        var json = try await self.json(topic, for: creator, members: [creator])
        json["topic_id"] = .string(topicID.text)
        json["join_code"] = .string(joinCode)
        return JSONResponse.make(status: .created, body: json, headers: [.cacheControl: "no-store"])
    }

    @Sendable func join(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        let code = try fields.requiredString("join_code")
        let name = try TopicNameRule.validated(try fields.optionalString("name"), field: "name")
        let text = context.parameters.get("topic") ?? ""
        let topic = try await credentials.check(.topicID(text), of: request, context: context) {
            // The code is compared (in constant time) whether or not the topic exists, and both refusals are one 404.
            let topic = try await topics.lookUp(text)
            guard TopicJoinCode.matches(code, hash: topic?.joinCodeHash ?? ""), let topic else { throw TopicDirectory.notFound }
            return topic
        }
        let member = TopicMember(topicID: topic.id, deviceID: device.id, name: name, joinedAt: clock.now())
        let outcome = try await storeCall { try await store.joinTopic(member, limits: topics.limits) }
        try refusal(of: outcome)
        let joined: TopicMember
        switch outcome {
        case .joined(let stored), .alreadyMember(let stored): joined = stored
        default: throw TopicDirectory.notFound
        }
        if case .joined = outcome {
            context.logger.info("Topic joined", metadata: ["device": "\(device.id)", "topic": "\(topic.id)"])
        }
        var json = try await self.json(topic, for: joined, members: try await storeCall { try await store.topicMembers(topicID: topic.id) })
        json["topic_id"] = .string(TopicID(text)?.text ?? text)
        if case .joined = outcome { return JSONResponse.make(status: .created, body: json) }
        return JSONResponse.make(status: .ok, body: json)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (_, topic, me, members) = try await membership(request, context)
        return JSONResponse.make(status: .ok, body: try await json(topic, for: me, members: members))
    }

    @Sendable func remove(_ request: Request, context: Context) async throws -> Response {
        let (device, topic, me, members) = try await membership(request, context)
        let raw = context.parameters.get("member") ?? ""
        let target: TopicMember?
        if raw == "me" {
            target = me
        } else {
            target = UUID(uuidString: raw).flatMap { id in members.first { $0.id == id } }
        }
        guard let target else { throw APIError.notFound("No member of this topic has this member_id.") }
        if target.deviceID == topic.creatorID {
            throw APIError.invalidField(
                "member_id", "The creator cannot leave its topic or be removed from it; delete the topic (DELETE /api/push/topics/{topic_id}) instead.")
        }
        guard target.deviceID == device.id || device.id == topic.creatorID else { throw APIError(.notTopicCreator) }
        _ = try await storeCall { try await store.removeTopicMember(topicID: topic.id, memberID: target.id) }
        context.logger.info("Topic member removed", metadata: ["topic": "\(topic.id)", "member": "\(target.id)"])
        return Response(status: .noContent)
    }

    @Sendable func rotate(_ request: Request, context: Context) async throws -> Response {
        let (device, topic, _, _) = try await membership(request, context)
        guard device.id == topic.creatorID else { throw APIError(.notTopicCreator) }
        let code = TopicJoinCode.random()
        guard try await storeCall({ try await store.updateTopicJoinCode(topicID: topic.id, joinCodeHash: TopicJoinCode.hash(code)) }) else {
            throw TopicDirectory.notFound
        }
        return JSONResponse.make(status: .ok, body: ["join_code": .string(code)], headers: [.cacheControl: "no-store"])
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let (device, topic, _, _) = try await membership(request, context)
        guard device.id == topic.creatorID else { throw APIError(.notTopicCreator) }
        try await storeCall { try await store.deleteTopic(id: topic.id) }
        context.logger.info("Topic deleted", metadata: ["topic": "\(topic.id)"])
        return Response(status: .noContent)
    }

    // MARK: Helpers

    private func owner(_ request: Request, _ context: Context) async throws -> Device {
        try await credentials.check(.basic(of: request), of: request, context: context) { try await directory.owner(of: request) }
    }

    /// The owner, the topic of the path and the owner's membership of it, with every member; 404 (a failed credential
    /// check) when the topic is unknown or the owner is not a member.
    private func membership(_ request: Request, _ context: Context) async throws -> (Device, Topic, TopicMember, [TopicMember]) {
        let device = try await owner(request, context)
        let text = context.parameters.get("topic") ?? ""
        return try await credentials.check(.topicID(text), of: request, context: context) {
            guard let topic = try await topics.lookUp(text) else { throw TopicDirectory.notFound }
            let members = try await storeCall { try await store.topicMembers(topicID: topic.id) }
            guard let me = members.first(where: { $0.deviceID == device.id }) else { throw TopicDirectory.notFound }
            return (device, topic, me, members)
        }
    }

    /// A body that may be empty (`POST /api/push/topics` takes none): an empty one is `{}`, any other must be a JSON object.
    private func optionalBody(_ request: Request) async throws -> JSONObject {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: bodyLimit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: bodyLimit)
        }
        guard buffer.readableBytes > 0 else { return [:] }
        request.body = RequestBody(buffer: buffer)
        return try await JSONBody.object(of: request, limit: bodyLimit)
    }

    private func refusal(of outcome: TopicJoinOutcome) throws {
        switch outcome {
        case .joined, .alreadyMember: return
        case .notFound: throw TopicDirectory.notFound
        case .topicFull:
            throw APIError(
                .topicFull, message: "This topic has \(topics.limits.maximumMembers) members, as many as a topic may have.",
                extra: ["limit": .int(topics.limits.maximumMembers)])
        case .tooManyTopics:
            throw APIError(
                .tooManyTopics,
                message: "This device is a member of \(topics.limits.maximumTopicsPerDevice) topics, as many as a device may be; leave one first.",
                extra: ["limit": .int(topics.limits.maximumTopicsPerDevice)])
        }
    }

    /// `{"name", "created_at", "member_id", "is_creator", "member_count", "members"?}`: `members` (each
    /// `{"member_id", "name", "platform", "joined_at", "is_creator"}`) for the creator only.
    private func json(_ topic: Topic, for me: TopicMember, members: [TopicMember]) async throws -> JSONObject {
        let isCreator = me.deviceID == topic.creatorID
        var json: JSONObject = [
            "name": topic.name.map(JSONValue.string) ?? .null, "created_at": .string(topic.createdAt.iso8601WithMilliseconds),
            "member_id": .string(me.id.lowercasedText), "is_creator": .bool(isCreator), "member_count": .int(members.count),
            "limits": ["members": .int(topics.limits.maximumMembers), "topics_per_device": .int(topics.limits.maximumTopicsPerDevice)],
        ]
        if isCreator {
            var list: [JSONValue] = []
            for member in members {
                let device = try await storeCall { try await store.device(id: member.deviceID) }
                list.append([
                    "member_id": .string(member.id.lowercasedText), "name": member.name.map(JSONValue.string) ?? .null,
                    "platform": device.map { .string($0.platform.rawValue) } ?? .null,
                    "joined_at": .string(member.joinedAt.iso8601WithMilliseconds), "is_creator": .bool(member.deviceID == topic.creatorID),
                ])
            }
            json["members"] = .array(list)
        }
        return json
    }
}

/// A topic's or a member's label: at most 64 characters, no control characters; `""` and `null` are none.
enum TopicNameRule {
    static let maximumLength = 64

    static func validated(_ value: String?, field: String) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.count <= maximumLength else {
            throw APIError.invalidField(field, "\(field) must be at most \(maximumLength) characters; got \(value.count).")
        }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.invalidField(field, "\(field) must not contain control characters.")
        }
        return value
    }
}
