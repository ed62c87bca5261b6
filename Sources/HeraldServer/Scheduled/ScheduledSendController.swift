import Foundation
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import Hummingbird

/// `POST /notifications/scheduled`, `GET /notifications/scheduled[/{id}]`, `DELETE /notifications/scheduled/{id}
/// [?purge=true]`: notifications sent later, with an API token's `notifications` scope, to the token's own device.
/// A token sees and cancels only what it scheduled (another's reads 404). A canceled send reads `canceled` for 24 hours,
/// then 404 (or at once with `purge=true`).
struct ScheduledSendController<Context: RemoteAddressRequestContext>: Sendable {
    /// How long a canceled send is still shown.
    static var canceledShownFor: TimeInterval { 86_400 }
    static var listLimit: Int { 100 }

    let store: any ScheduledSendStore
    let pipeline: SendPipeline
    let authorizer: PushWardAuthorizer
    let dispatcher: ScheduledSendDispatcher
    let clock: any WallClock
    let bodyLimit: Int
    /// The providers, whose limits' owner a refusal names.
    let providers: ProviderProfiles

    func addRoutes(to router: some RouterMethods<Context>) {
        router.post("notifications/scheduled", use: create)
        router.get("notifications/scheduled", use: list)
        router.get("notifications/scheduled/:id", use: show)
        router.delete("notifications/scheduled/:id", use: cancel)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let now = clock.now()
        let parsed = try ScheduledSendRequest(try await JSONBody.object(of: request, limit: bodyLimit), now: now)
        try parsed.parsed.checkActionsFit(
            pipeline.renderers.renderer(for: device.platform), provider: providers.possessiveName(for: device.platform))
        let send = ScheduledSend(
            deviceID: device.id, tokenID: token.id, notification: try JSONValue.object(parsed.notification).encoded(), sendAt: parsed.sendAt,
            recurrence: parsed.recurrence, nextAt: parsed.firstAt, createdAt: now)
        try await ScheduledSendRequest.insert(send, into: store)
        dispatcher.wake()
        return JSONResponse.make(status: .created, body: send.json)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let now = clock.now()
        let sends = try await storeCall { try await store.scheduledSends(tokenID: token.id, limit: Self.listLimit) }
        return JSONResponse.make(status: .ok, body: ["items": .array(sends.filter { isShown($0, now: now) }.map { .object($0.json) })])
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let send = try await ownSend(request, context: context, token: token.id)
        return JSONResponse.make(status: .ok, body: send.json)
    }

    @Sendable func cancel(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let send = try await ownSend(request, context: context, token: token.id)
        let purge = request.uri.queryParameters["purge"].map { String($0) }
        guard purge == nil || purge == "true" || purge == "false" else {
            throw APIError.invalidField("purge", "purge must be true or false.")
        }
        if purge == "true" {
            try await storeCall { try await store.deleteScheduledSend(id: send.id) }
            return Response(status: .noContent)
        }
        let canceled = try await storeCall { try await store.cancelScheduledSend(id: send.id, at: clock.now()) }
        return JSONResponse.make(status: .ok, body: (canceled ?? send).json)
    }

    /// The send named in the path, when this token scheduled it and it is still shown; 404 otherwise.
    private func ownSend(_ request: Request, context: Context, token: UUID) async throws -> ScheduledSend {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
            let send = try await storeCall({ try await store.scheduledSend(id: id) }), send.tokenID == token, isShown(send, now: clock.now())
        else { throw APIError.notFound("No scheduled send of this token has this id.") }
        return send
    }

    private func isShown(_ send: ScheduledSend, now: Date) -> Bool {
        guard send.status == .canceled, let canceledAt = send.canceledAt else { return true }
        return now.timeIntervalSince(canceledAt) < Self.canceledShownFor
    }
}
