import Foundation
import HeraldCore
import Hummingbird

/// `GET /api/push/notifications/{id}`: what happened to one notification. Visible to its sender
/// (`Authorization: Bearer <USER_ID>` or `Bearer hrd_…` with an API token of the device) and to the device owner
/// (Basic); anyone else gets 404.
struct NotificationStatusController<Context: RequestContext>: Sendable {
    let store: any HeraldStore
    let directory: DeviceDirectory
    let tokens: APITokenManager

    func addRoutes(to group: RouterGroup<Context>) {
        group.get("notifications/{id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let notFound = APIError.notFound("No notification with this id is visible with these credentials.")
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw notFound }
        let device: Device
        if let bearer = Credentials.bearer(request), APITokenManager.isWellFormed(bearer) {
            guard let found = try? await tokens.authenticate(bearer: bearer).device else { throw notFound }
            device = found
        } else if let userID = Credentials.bearer(request), Secrets.isHex256(userID) {
            guard let found = try? await directory.device(userID: userID) else { throw notFound }
            device = found
        } else if Credentials.basic(request) != nil {
            guard let found = try? await directory.owner(of: request) else { throw notFound }
            device = found
        } else {
            throw notFound
        }
        let stored: PushNotification?
        do {
            stored = try await store.notification(id: id)
        } catch {
            throw APIError.storeUnavailable("\(error)")
        }
        guard let notification = stored, notification.deviceID == device.id else { throw notFound }
        var body: JSONObject = [
            "id": .string(notification.id.uuidString.lowercased()), "status": .string(notification.status.rawValue),
            "attempts": .int(notification.attempts), "created_at": .string(notification.createdAt.iso8601WithMilliseconds),
            "updated_at": .string(notification.updatedAt.iso8601WithMilliseconds),
            "expires_at": .string(notification.expiresAt.iso8601WithMilliseconds),
        ]
        if notification.status == .pending {
            body["next_attempt_at"] = .string(notification.nextAttemptAt.iso8601WithMilliseconds)
        }
        if let error = notification.lastError { body["last_error"] = .string(error) }
        if let apnsID = notification.providerMessageID { body["apns_id"] = .string(apnsID) }
        return JSONResponse.make(status: .ok, body: body)
    }
}
