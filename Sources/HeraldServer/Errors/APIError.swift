import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// Every refusal Herald answers with: a stable code, an HTTP status, a human sentence, and where it applies the
/// JSON path of the offending field. Rendered once, in ``response(from:context:)``; a dialect with its own error
/// shape (Home Assistant) renders it through its own middleware.
public struct APIError: Error, Sendable, Equatable {
    /// A stable machine-readable code, e.g. `invalid_field`.
    public var code: String
    public var status: HTTPResponse.Status
    /// A human sentence, never empty.
    public var message: String
    /// The JSON path of the field the error is about (`snapshot.id`, `actions[2].url`), or `$` for the whole body.
    public var field: String?
    /// Extra members of the JSON body (e.g. `rateLimits`).
    public var extra: JSONObject
    /// Extra response headers (e.g. `Retry-After`, `WWW-Authenticate`).
    public var headers: HTTPFields

    public init(
        _ status: HTTPResponse.Status, code: String, message: String, field: String? = nil, extra: JSONObject = [:],
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.extra = extra
        self.headers = headers
    }

    /// 400 for a field that breaks a rule.
    public static func invalidField(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_field", message: message, field: field)
    }

    /// 400 for a body that is not a JSON object.
    public static func malformedJSON(_ detail: String) -> APIError {
        APIError(.badRequest, code: "malformed_json", message: "The request body is not a JSON object: \(detail).", field: "$")
    }

    /// 413 for a body over the configured limit.
    public static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "body_too_large", message: "The request body is larger than \(limit) bytes.")
    }

    /// 404 for an unknown USER_ID.
    public static let unknownUser = APIError(
        .notFound, code: "unknown_user", message: "No device is registered under this USER_ID.", field: "user_id")

    /// 401 when owner credentials are missing.
    public static let ownerCredentialsRequired = APIError(
        .unauthorized, code: "credentials_required",
        message: "This endpoint needs the device owner's credentials as HTTP Basic user_id:device_secret.",
        headers: [.wwwAuthenticate: #"Basic realm="herald""#])

    /// 403 for a device secret that does not match.
    public static let wrongDeviceSecret = APIError(
        .forbidden, code: "wrong_device_secret", message: "The device secret does not match this USER_ID.",
        field: "device_secret")

    /// 429 for a client address locked out after too many failed credential checks (``AuthFailureLimiter``).
    public static func tooManyAuthFailures(retryAfter seconds: Int) -> APIError {
        APIError(
            .tooManyRequests, code: "too_many_auth_failures",
            message: "Too many failed authentication attempts from this address; try again in \(seconds) seconds.",
            headers: [.retryAfter: "\(seconds)"])
    }

    /// 429 for a client address that registered too many new devices in a short time (``RegistrationLimiter``).
    public static func registrationRateLimited(retryAfter seconds: Int) -> APIError {
        APIError(
            .tooManyRequests, code: "registration_rate_limited",
            message: "Too many registrations from this address; try again in \(seconds) seconds.",
            headers: [.retryAfter: "\(seconds)"])
    }

    /// 503 for a new registration beyond `HERALD_MAX_DEVICES`.
    public static let deviceLimitReached = APIError(
        .serviceUnavailable, code: "device_limit_reached",
        message: "This Herald server has as many devices as its operator allows; no new device can register.")

    /// 401 for a new registration without `X-Herald-Registration-Token` where `HERALD_REGISTRATION_TOKEN` is set.
    public static let registrationTokenRequired = APIError(
        .unauthorized, code: "registration_token_required",
        message: "This server registers new devices only with its registration token in the X-Herald-Registration-Token header.")

    /// 403 for a registration token that is not the server's.
    public static let wrongRegistrationToken = APIError(
        .forbidden, code: "wrong_registration_token", message: "The registration token is not this server's.")

    /// 404 for a route or resource that does not exist.
    public static func notFound(_ message: String = "There is nothing at this address.") -> APIError {
        APIError(.notFound, code: "not_found", message: message)
    }

    /// 405 for a method the path does not take; `Allow` lists the ones it does.
    public static func methodNotAllowed(allow: String) -> APIError {
        APIError(
            .methodNotAllowed, code: "method_not_allowed", message: "This address does not take that method; it takes \(allow).",
            headers: [.allow: allow])
    }

    /// 503 when the store does not answer.
    public static func storeUnavailable(_ detail: String) -> APIError {
        APIError(.serviceUnavailable, code: "store_unavailable", message: "The store is not available; try again shortly.")
    }
}

extension APIError: HTTPResponseError {
    /// The body every dialect but Home Assistant's uses: `{"error", "code", "field"?, ...extra}`.
    public var body: JSONObject {
        var body = extra
        body["error"] = .string(message)
        body["code"] = .string(code)
        if let field { body["field"] = .string(field) }
        return body
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.make(status: status, body: body, headers: headers)
    }
}
