import Foundation
import HeraldActivities
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import HeraldWebPush
import Hummingbird

/// `POST /notifications`: actionable notifications, sent with an API token (`Authorization: Bearer hrd_…`) to the
/// token's own device. Failed token checks count towards the client's ``AuthFailureLimiter`` lockout. With
/// `"push": false` the notification is kept in the device's inbox and not pushed.
struct ActionNotificationController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    /// The token and its `notifications` scope.
    let authorizer: PushWardAuthorizer
    /// Where `activity_slug` is looked up.
    let activities: any ActivityStore
    let clock: any WallClock
    let bodyLimit: Int
    /// The providers, whose limits' owner a refusal names.
    let providers: ProviderProfiles
    /// Repeats until acknowledged (`acknowledge`; Receipts/).
    var receipts: ReceiptDispatcher? = nil
    /// Which addresses a `callback_url` may name (`HERALD_CALLBACK_ALLOWED_NETWORKS`).
    var callbackPolicy: WebPushEgressPolicy = .knownServicesOnly

    func addRoutes(to router: some RouterMethods<Context>) {
        router.post("notifications", use: send)
    }

    @Sendable func send(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        return try await SendAnswers.withRateLimitHeaders(of: device, pipeline: pipeline, clock: clock) {
            let notification = try ActionNotificationRequest(try await JSONBody.object(of: request, limit: bodyLimit))
            try notification.checkActionsFit(
                pipeline.renderers.renderer(for: device.platform), provider: providers.possessiveName(for: device.platform))
            if let slug = notification.pushWard.activitySlug {
                let activity = try await storeCall { try await activities.activity(deviceID: device.id, slug: slug) }
                guard let activity, !activity.isTombstone else {
                    throw APIError(.activityNotFound, message: "activity_slug not found: this device has no activity \"\(slug)\".", field: "activity_slug")
                }
            }
            var draft = notification.draft
            // Who may read the answer (GET /notifications/answers/{id}); never sent to the device.
            draft.content.meta["sender_token"] = .string(token.id.lowercasedText)
            if let callbackURL = notification.callbackURL {
                // Where the receipt's end is POSTed (Callbacks/), signed with this token's secret; kept, never sent.
                draft.content.meta[CallbackOutbox.callbackURLKey] = .string(
                    try CallbackURLRule.validated(callbackURL, field: "callback_url", policy: callbackPolicy))
            }
            if let acknowledge = notification.acknowledge {
                guard let receipts else { throw APIError.invalidField("acknowledge", "acknowledge is not available on this server.") }
                return try await receipts.sendAcknowledged(notification, draft: draft, acknowledge: acknowledge, to: device, token: token.id)
            }
            do throws(SendError) {
                let receipt = notification.pushWard.push ? try await pipeline.send(draft, to: device) : try await pipeline.keep(draft, for: device)
                return ActionNotificationAnswer.created(receipt, of: notification, now: clock.now())
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
        }
    }
}
