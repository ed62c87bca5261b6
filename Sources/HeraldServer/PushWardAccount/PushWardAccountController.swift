import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// PushWard's account paths, at PushWard's addresses so that its clients work against Herald by changing the base
/// URL: `GET /health` (`{"status": "ok"}`, no credentials) and `GET /auth/me` (an API token with `activity:update`):
/// PushWard's `User` for the token's device with today's notification usage against its daily limit. Errors are
/// problem details (``ErrorShape/problemDetails``).
///
/// `id` is the device's id (never its USER_ID, a secret); `nickname` is `null` (Herald has no display names);
/// `subscribed` is always `true` (a self-hosted server sells nothing); `activity_count` is what
/// ``activityCount`` says for the device.
struct PushWardAccountController<Context: RemoteAddressRequestContext>: Sendable {
    let authorizer: PushWardAuthorizer
    let pipeline: SendPipeline
    /// How many activities the device has (PushWard's activity store answers it).
    let activityCount: @Sendable (Device.ID) async throws -> Int

    func addRoutes(to router: some RouterMethods<Context>) {
        let account = router.group().add(middleware: ErrorShapeMiddleware(.problemDetails))
        account.get("health", use: health)
        account.get("auth/me", use: me)
    }

    @Sendable func health(_ request: Request, context: Context) async throws -> Response {
        JSONResponse.make(status: .ok, body: ["status": "ok"])
    }

    @Sendable func me(_ request: Request, context: Context) async throws -> Response {
        let (_, device) = try await authorizer.authorize(request, context: context, scope: .activityUpdate)
        let quota: QuotaStatus
        do throws(SendError) {
            quota = try await pipeline.quota(of: device)
        } catch {
            throw SendAnswers.apiError(error, now: Date())
        }
        let activities: Int
        do {
            activities = try await activityCount(device.id)
        } catch {
            throw APIError.storeUnavailable(String(reflecting: type(of: error)))
        }
        return JSONResponse.make(
            status: .ok,
            body: [
                "id": .string(device.id.lowercasedText), "nickname": .null, "subscribed": .bool(true),
                "activity_count": .int(activities), "notifications_used": .int(quota.counters.total),
                "notifications_limit": .int(quota.maximum), "quota_resets_at": .string(quota.resetsAt.iso8601WithMilliseconds),
            ])
    }
}
