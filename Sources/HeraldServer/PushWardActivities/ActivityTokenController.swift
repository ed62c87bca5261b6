import Foundation
import HeraldActivities
import HeraldCore
import Hummingbird
import Logging

/// The device side of PushWard activities, with the device owner's credentials (HTTP Basic `user_id:device_secret`,
/// as the token endpoints take them):
/// - `PUT /api/push/activities/{slug}/token` `{"token": "<hex>"}` → 204: the update token ActivityKit issued for the
///   activity. Until it arrives the newest state waits; it goes out as soon as the token does.
/// - `DELETE /api/push/activities/{slug}/token` → 204: the user dismissed the activity; Herald stops pushing to it and
///   marks it ended.
///
/// A slug the device has no activity for is 404 `not_found`. Errors are Herald's (`{"error", "code", "field"}`).
struct ActivityTokenController<Context: RemoteAddressRequestContext>: Sendable {
    let service: ActivityService
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let bodyLimit: Int

    func addRoutes(to group: RouterGroup<Context>) {
        group.put("activities/:slug/token", use: setToken)
        group.delete("activities/:slug/token", use: dismiss)
    }

    @Sendable func setToken(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let slug = try Self.slug(context)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        let token = try fields.requiredString("token")
        guard Secrets.isHex(token), token.utf8.count % 2 == 0, RegisterRequest.apnsTokenLength.contains(token.utf8.count) else {
            let lengths = RegisterRequest.apnsTokenLength
            throw APIError.invalidField(
                "token", "token must be the activity's APNs update token: \(lengths.lowerBound) to \(lengths.upperBound) hex digits, an even number.")
        }
        try await answering { () async throws(ActivityProblem) in try await service.setUpdateToken(token.lowercased(), slug: slug, of: device) }
        context.logger.info("Activity update token received", metadata: ["device": "\(device.id)", "slug": "\(slug)"])
        return Response(status: .noContent)
    }

    @Sendable func dismiss(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let slug = try Self.slug(context)
        try await answering { () async throws(ActivityProblem) in try await service.dismiss(slug: slug, of: device) }
        return Response(status: .noContent)
    }

    private func owner(_ request: Request, _ context: Context) async throws -> Device {
        try await credentials.check(.basic(of: request), of: request, context: context) { try await directory.owner(of: request) }
    }

    private static func slug(_ context: Context) throws -> String {
        let slug = context.parameters.get("slug") ?? ""
        guard ActivitySlug.isValid(slug) else { throw APIError.invalidField("slug", "slug must be an activity's slug.") }
        return slug
    }

    /// Herald's answers for the service's refusals: 404 for an unknown activity, 503 when the store is away.
    private func answering(_ body: () async throws(ActivityProblem) -> Void) async throws {
        do throws(ActivityProblem) {
            try await body()
        } catch {
            switch error.status {
            case 404: throw APIError(.notFound, message: "This device has no activity with that slug.")
            case 503: throw APIError.storeUnavailable(error.cause ?? "activity store")
            default: throw APIError(.invalidField, message: error.detail)
            }
        }
    }
}
