import Foundation
import HeraldCore
import Hummingbird

/// `GET /api/push/notifications?limit=N`: the device owner's latest notifications, newest first, with what each says,
/// so that an app's inbox can show what it missed (Herald's web app backfills its inbox from it; docs/webapp.md).
///
/// Owner credentials only (`Authorization: Basic user_id:device_secret`): a sender knows the USER_ID but must not
/// read what else the device was sent. Each element is the notification as the web app's service worker receives it
/// (the document of the inbox's ``renderer``, Web Push's, which the composition root hands it, with the notification's
/// `id`), plus its `status` and `created_at`, whatever the device's provider:
///
/// ```json
/// {"notifications": [{"id": "…", "status": "delivered", "created_at": "…", "title": "Door", "body": "Opened",
///                     "url": "https://…", "tag": "door", "actions": [{"id": "open", "title": "Open", …}]}]}
/// ```
struct RecentNotificationsController<Context: RemoteAddressRequestContext>: Sendable {
    /// Notifications listed without `limit`, and the most `limit` may ask for.
    static var defaultLimit: Int { 50 }
    static var maximumLimit: Int { 100 }

    let store: any DashboardStore
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    /// What each notification's content is rendered as (the composition root gives Web Push's renderer: the web
    /// app's service worker reads the same document).
    let renderer: any PayloadRenderer

    func addRoutes(to group: RouterGroup<Context>) {
        group.get("notifications", use: list)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let limit = try Self.limit(request.uri.queryParameters["limit"].map(String.init))
        let device = try await credentials.check(.basic(of: request), of: request, context: context) {
            try await directory.owner(of: request)
        }
        let recent = try await storeCall { try await store.recentNotifications(deviceID: device.id, limit: limit) }
        return JSONResponse.make(status: .ok, body: ["notifications": .array(recent.map { .object(item($0)) })])
    }

    /// `limit`: absent for ``defaultLimit``, else a whole number from 1 to ``maximumLimit``.
    static func limit(_ given: String?) throws -> Int {
        guard let given else { return defaultLimit }
        guard let limit = Int(given), (1...maximumLimit).contains(limit) else {
            throw APIError.invalidField("limit", "limit must be a whole number from 1 to \(maximumLimit); got \"\(given)\".")
        }
        return limit
    }

    /// One notification as the inbox shows it: its content rendered by ``renderer``, its id, state and time of acceptance.
    func item(_ notification: PushNotification) -> JSONObject {
        let content = notification.content ?? NotificationContent()
        var item = renderer.renderContent(content, priority: notification.priority, collapseID: notification.collapseID).payload
        item["id"] = .string(notification.id.lowercasedText)
        item["status"] = .string(notification.status.rawValue)
        item["created_at"] = .string(notification.createdAt.iso8601WithMilliseconds)
        return item
    }
}
