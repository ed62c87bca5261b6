import Foundation
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import Hummingbird

/// `GET /api/push/notifications/{id}`: what happened to one notification. Visible to its sender
/// (`Authorization: Bearer <USER_ID>` or `Bearer hrd_…` with an API token of the device) and to the device owner
/// (Basic); anyone else gets 404. Credentials that do not authenticate count as a failed credential check.
struct NotificationStatusController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let tokens: APITokenManager
    let credentials: CredentialGuard
    /// The app's events and the answer (issue 39).
    let reports: any AfterPushStore
    /// The providers, for the member that repeats a provider's id under its own name (`apns_id`).
    let providers: ProviderProfiles
    /// Topic ids as credentials (issue 42): a topic's sender reads each member's notification; `nil`: none.
    var topics: TopicDirectory? = nil

    func addRoutes(to group: RouterGroup<Context>) {
        group.get("notifications/{id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let notFound = APIError.notFound("No notification with this id is visible with these credentials.")
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw notFound }
        let device: Device
        if let topics, let bearer = Credentials.bearer(request), TopicID.accepts(bearer) {
            // A topic's sender: a notification of any member's device, while that device is a member.
            let members = try await credentials.check(.topicID(bearer), of: request, context: context) { () async throws -> [Device] in
                guard let topic = try await topics.lookUp(bearer) else { throw notFound }
                return try await topics.targets(of: topic).map(\.device)
            }
            let stored = try await storeCall { try await pipeline.notification(id: id) }
            guard let notification = stored, let member = members.first(where: { $0.id == notification.deviceID }) else { throw notFound }
            return try await answer(notification, of: member)
        } else if let bearer = Credentials.bearer(request), APITokenManager.isWellFormed(bearer) {
            device = try await authenticated(.apiToken(bearer), request, context, notFound) {
                do throws(APITokenError) {
                    return try await tokens.authenticate(bearer: bearer).device
                } catch {
                    throw APIError(apiToken: error)
                }
            }
        } else if let bearer = Credentials.bearer(request), let userID = UserID(bearer) {
            device = try await authenticated(.userID(userID), request, context, notFound) { try await directory.device(userID: userID) }
        } else if let basic = CredentialFingerprint.basic(of: request) {
            device = try await authenticated(basic, request, context, notFound) { try await directory.owner(of: request) }
        } else {
            device = try await authenticated(nil, request, context, notFound) { throw notFound }
        }
        let stored = try await storeCall { try await pipeline.notification(id: id) }
        guard let notification = stored, notification.deviceID == device.id else { throw notFound }
        return try await answer(notification, of: device)
    }

    private func answer(_ notification: PushNotification, of device: Device) async throws -> Response {
        let id = notification.id
        var body: JSONObject = [
            "id": .string(notification.id.lowercasedText), "status": .string(notification.status.rawValue),
            "attempts": .int(notification.attempts), "created_at": .string(notification.createdAt.iso8601WithMilliseconds),
            "updated_at": .string(notification.updatedAt.iso8601WithMilliseconds),
            "expires_at": .string(notification.expiresAt.iso8601WithMilliseconds),
        ]
        if notification.status == .pending {
            body["next_attempt_at"] = .string(notification.nextAttemptAt.iso8601WithMilliseconds)
        }
        if let error = notification.lastError { body["last_error"] = .string(error) }
        // End-to-end encrypted (docs/e2e.md): which key opens it; Herald cannot say more.
        if let keyID = notification.content?.encrypted?.keyID { body["encrypted_key_id"] = .string(keyID) }
        if let providerID = notification.providerMessageID {
            // The provider's id: an `apns-id`, FCM's message name (`projects/…/messages/…`), or a push service's
            // `Location` (Web Push); repeated under the name of the provider that renders for the device, when it has
            // one (`apns_id`: APNs, and WebSocket-only devices, which get APNs' payload).
            body["provider_message_id"] = .string(providerID)
            if let field = providers.profile(for: device.platform)?.description.messageIDField { body[field] = .string(providerID) }
        }
        // What the app reported (`events: [{event, at}]`) and, for an answerable notification, its answer.
        body["events"] = AnswerJSON.events(try await storeCall { try await reports.events(of: id) })
        if AnswerJSON.isAnswerable(notification.content) {
            body["answer"] = AnswerJSON.answer(try await storeCall { try await reports.answers(of: [id])[id] })
        }
        return JSONResponse.make(status: .ok, body: body)
    }

    /// The device `authenticate` finds for `credential`; any refusal but an unavailable store becomes `notFound`
    /// (and counts as a failed credential check).
    private func authenticated(
        _ credential: CredentialFingerprint?, _ request: Request, _ context: Context, _ notFound: APIError,
        _ authenticate: () async throws -> Device
    ) async throws -> Device {
        try await credentials.check(credential, of: request, context: context) {
            do {
                return try await authenticate()
            } catch let error as APIError where error.status == .serviceUnavailable {
                throw error
            } catch {
                throw notFound
            }
        }
    }
}
