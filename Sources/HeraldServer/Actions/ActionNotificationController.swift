import Foundation
import HeraldCore
import Hummingbird

/// `POST /notifications`: actionable notifications, sent with an API token (`Authorization: Bearer hrd_…`) to the
/// token's own device. Failed token checks count towards the client's ``AuthFailureLimiter`` lockout.
struct ActionNotificationController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    /// The token and its `notifications` scope.
    let authorizer: PushWardAuthorizer
    let clock: any WallClock
    let bodyLimit: Int

    func addRoutes(to router: some RouterMethods<Context>) {
        router.post("notifications", use: send)
    }

    @Sendable func send(_ request: Request, context: Context) async throws -> Response {
        let (_, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        return try await SendAnswers.withRateLimitHeaders(of: device, pipeline: pipeline, clock: clock) {
            let notification = try ActionNotificationRequest(try await JSONBody.object(of: request, limit: bodyLimit))
            try notification.checkActionsFit(pipeline.renderers.renderer(for: device.platform))
            do throws(SendError) {
                let receipt = try await pipeline.send(notification.draft, to: device)
                return SendAnswers.created(receipt, now: clock.now(), pushWard: true)
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
        }
    }
}
