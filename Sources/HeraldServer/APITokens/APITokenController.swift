import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// API tokens, managed by the device owner (HTTP Basic `user_id:device_secret`):
/// `POST /api/push/tokens` creates one (its text is in this answer only), `GET /api/push/tokens` lists the active
/// ones, `DELETE /api/push/tokens/{id or name}` revokes one. Failed owner authentications count towards the
/// client's ``AuthFailureLimiter`` lockout. The rules are ``APITokenManager``'s; its refusals are answered as
/// `APIError.init(apiToken:)` maps them.
struct APITokenController<Context: RemoteAddressRequestContext>: Sendable {
    let tokens: APITokenManager
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let bodyLimit: Int

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("tokens", use: create)
        group.get("tokens", use: list)
        group.delete("tokens/{token}", use: revoke)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let body = try await JSONBody.object(of: request, limit: bodyLimit)
        let fields = FieldReader(body)
        let name = try fields.requiredString("name")
        let scopes = try fields.optionalStringArray("scopes")
        let slugs = try fields.optionalStringArray("slugs")
        let issued: APITokenManager.Issued
        do throws(APITokenError) {
            issued = try await tokens.create(name: name, grants: try APITokenGrants(scopes: scopes, slugs: slugs), for: device)
        } catch {
            throw APIError(apiToken: error)
        }
        credentials.limiter.remember(.apiToken(issued.secret))
        context.logger.info("API token created", metadata: ["device": "\(device.id)", "token": "\(issued.token.id)"])
        var json = Self.json(issued.token)
        json["token"] = .string(issued.secret)
        json["last_used_at"] = nil
        return JSONResponse.make(status: .created, body: json, headers: [.cacheControl: "no-store"])
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let active: [APIToken]
        do throws(APITokenError) {
            active = try await tokens.activeTokens(of: device)
        } catch {
            throw APIError(apiToken: error)
        }
        return JSONResponse.make(status: .ok, body: ["tokens": .array(active.map { .object(Self.json($0)) })])
    }

    @Sendable func revoke(_ request: Request, context: Context) async throws -> Response {
        let device = try await owner(request, context)
        let raw = context.parameters.get("token") ?? ""
        let revoked: APIToken
        do throws(APITokenError) {
            revoked = try await tokens.revoke(raw.removingPercentEncoding ?? raw, of: device)
        } catch {
            throw APIError(apiToken: error)
        }
        context.logger.info("API token revoked", metadata: ["device": "\(device.id)", "token": "\(revoked.id)"])
        return Response(status: .noContent)
    }

    private func owner(_ request: Request, _ context: Context) async throws -> Device {
        try await credentials.check(.basic(of: request), of: request, context: context) { try await directory.owner(of: request) }
    }

    /// `{"id", "name", "scopes", "slugs", "created_at", "last_used_at"}` (`last_used_at` is `null` until the token is
    /// used; `slugs` is empty when every slug is allowed).
    static func json(_ token: APIToken) -> JSONObject {
        [
            "id": .string(token.id.lowercasedText), "name": .string(token.name),
            "scopes": .array(token.grants.scopes.sorted().map { .string($0.rawValue) }),
            "slugs": .array(token.grants.slugPatterns.map(JSONValue.string)),
            "created_at": .string(token.createdAt.iso8601WithMilliseconds),
            "last_used_at": token.lastUsedAt.map { .string($0.iso8601WithMilliseconds) } ?? .null,
        ]
    }
}
