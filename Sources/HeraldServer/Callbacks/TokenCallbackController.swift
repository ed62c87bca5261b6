import Foundation
import HeraldCore
import HeraldWebPush
import Hummingbird

/// What the routes need of callbacks: the outbox and the egress rules a given URL is checked against.
struct CallbackSettings: Sendable {
    let outbox: CallbackOutbox
    let policy: WebPushEgressPolicy
}

/// `PUT|GET|DELETE /notifications/callback`: the API token's outcome callback URL (docs/api.md, "Callbacks"). While
/// one is set, every notification the token sends through `POST /notifications` gets a signed callback when its
/// outcome is settled: `notification.delivered`, `notification.failed` (with the reason), `notification.expired`, and
/// `notification.answered` when the person answers it.
/// The token manages only its own setting, with its `notifications` scope.
struct TokenCallbackController<Context: RemoteAddressRequestContext>: Sendable {
    let store: any CallbackStore
    let authorizer: PushWardAuthorizer
    let policy: WebPushEgressPolicy
    let clock: any WallClock
    let bodyLimit: Int

    func addRoutes(to router: some RouterMethods<Context>) {
        router.put("notifications/callback", use: set)
        router.get("notifications/callback", use: show)
        router.delete("notifications/callback", use: clear)
    }

    /// `{"url": "https://…"}` → 200 `{"callback_url"}`.
    @Sendable func set(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        try fields.refuseUnknownMembers(allowed: ["url"])
        guard let raw = try fields.optionalString("url") else {
            throw APIError.invalidField("url", "url is required: the https:// URL that gets this token's delivery outcomes.")
        }
        let url = try CallbackURLRule.validated(raw, field: "url", policy: policy)
        let now = clock.now()
        try await storeCall { try await store.setTokenCallbackURL(url, tokenID: token.id, deviceID: device.id, at: now) }
        return JSONResponse.make(status: .ok, body: ["callback_url": .string(url)])
    }

    /// 200 `{"callback_url": url | null}`.
    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let url = try await storeCall { try await store.tokenCallbackURL(tokenID: token.id) }
        return JSONResponse.make(status: .ok, body: ["callback_url": url.map(JSONValue.string) ?? .null])
    }

    /// 204; the outcome callbacks stop (those already enqueued are still delivered).
    @Sendable func clear(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let now = clock.now()
        try await storeCall { try await store.setTokenCallbackURL(nil, tokenID: token.id, deviceID: device.id, at: now) }
        return Response(status: .noContent)
    }
}

extension CallbackOutbox {
    /// The key of ``NotificationContent/meta`` that holds a notification's `callback_url`.
    public static let callbackURLKey = "callback_url"
    /// The key of ``NotificationContent/meta`` that holds the sending token's id.
    public static let senderTokenKey = "sender_token"

    /// Enqueues `event` for `notification` when it was sent with a `callback_url` (receipts: acknowledged, expired);
    /// returns the callback, or `nil` when it asked for none.
    @discardableResult
    public func enqueueIfRequested(_ event: CallbackEvent, data: JSONObject, for notification: PushNotification) async throws -> CallbackDelivery? {
        guard let meta = notification.content?.meta, case .string(let url)? = meta[Self.callbackURLKey],
            case .string(let token)? = meta[Self.senderTokenKey], let tokenID = UUID(uuidString: token)
        else { return nil }
        return try await enqueue(event, data: data, url: url, deviceID: notification.deviceID, tokenID: tokenID)
    }
}
