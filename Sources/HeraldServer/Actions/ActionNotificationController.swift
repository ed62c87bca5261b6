import Foundation
import HeraldCore
import Hummingbird

/// `POST /notifications`: actionable notifications, sent with an API token (`Authorization: Bearer hrd_…`) to the
/// token's own device. Failed token checks count towards the client's ``AuthFailureLimiter`` lockout.
struct ActionNotificationController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    let tokens: APITokenManager
    let credentials: CredentialGuard
    let clock: any WallClock
    let bodyLimit: Int

    func addRoutes(to router: some RouterMethods<Context>) {
        router.post("notifications", use: send)
    }

    @Sendable func send(_ request: Request, context: Context) async throws -> Response {
        let bearer = Credentials.bearer(request)
        let (token, device) = try await credentials.check(bearer.map(CredentialFingerprint.apiToken), of: request, context: context) {
            do throws(APITokenError) {
                return try await tokens.authenticate(bearer: bearer)
            } catch {
                throw APIError(apiToken: error)
            }
        }
        guard token.grants.allows(.notifications) else {
            throw APIError(.insufficientScope, message: "insufficient permissions: this API token lacks the notifications scope.")
        }
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
