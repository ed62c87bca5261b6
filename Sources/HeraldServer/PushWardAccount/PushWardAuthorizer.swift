import HeraldActivities
import HeraldCore
import Hummingbird

/// Who may call PushWard's API on Herald: an API token (`Authorization: Bearer hrd_…`) with the scope the request needs
/// and, for an activity, a slug pattern that covers it. PushWard's rules (its `openapi.yaml`, "Authentication"):
/// `activity:update` reads and patches activities and `GET /auth/me`; `activity:manage` also creates and deletes.
///
/// Refusals are ``APIError``s that the route group answers as problem details: 401 `token.invalid`, 403 without a code
/// for a missing scope (PushWard's "insufficient permissions"), 403 `integration_key.slug_invalid` for a slug outside
/// the token's. Failed token checks count towards the client's ``AuthFailureLimiter`` lockout.
///
/// ```swift
/// let (token, device) = try await authorizer.authorize(request, context: context, scope: .activityManage, slug: "oven")
/// ```
struct PushWardAuthorizer: Sendable {
    let tokens: APITokenManager
    let credentials: CredentialGuard

    func authorize<Context: RemoteAddressRequestContext>(
        _ request: Request, context: Context, scope: APITokenScope, slug: String? = nil
    ) async throws -> (token: APIToken, device: Device) {
        let bearer = Credentials.bearer(request)
        let (token, device) = try await credentials.check(bearer.map(CredentialFingerprint.apiToken), of: request, context: context) {
            do throws(APITokenError) {
                return try await tokens.authenticate(bearer: bearer)
            } catch {
                throw APIError(apiToken: error)
            }
        }
        guard token.grants.allows(scope) else {
            throw APIError(.insufficientScope, message: "insufficient permissions: this API token lacks the \(scope.rawValue) scope.")
        }
        if let slug, !token.grants.allows(slug: slug) {
            throw PushWardActivitiesController<Context>.apiError(.slugNotAllowed)
        }
        return (token, device)
    }
}
