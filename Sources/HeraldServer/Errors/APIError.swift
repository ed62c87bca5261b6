import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// Every refusal Herald answers with: a stable code (``ErrorCode``), an HTTP status, a human sentence, and where it
/// applies the JSON path of the offending field. Rendered once, by ``JSONErrorMiddleware``, in the ``ErrorShape`` of
/// the dialect that answers (Home Assistant has its own).
public struct APIError: Error, Sendable, Equatable {
    /// A stable machine-readable code, e.g. ``ErrorCode/invalidField``.
    public var code: ErrorCode
    public var status: HTTPResponse.Status
    /// A human sentence, never empty.
    public var message: String
    /// The JSON path of the field the error is about (`snapshot.id`, `actions[2].url`), or `$` for the whole body.
    public var field: String?
    /// Extra members of the JSON body (e.g. `rateLimits`).
    public var extra: JSONObject
    /// Extra response headers (e.g. `Retry-After`, `WWW-Authenticate`).
    public var headers: HTTPFields
    /// What went wrong inside Herald (a store's error), for the log line the refusal is answered with; never in the
    /// answer.
    public var cause: String?
    /// The shape of the answer's body: its dialect's (``ErrorShapeMiddleware``), Herald's own by default.
    public var shape: ErrorShape = .standard

    /// An answer with `code`, its status and, unless `message` is given, its default sentence (a code with no status of
    /// its own, which only WebSocket results carry, would be a 500).
    public init(
        _ code: ErrorCode, message: String? = nil, field: String? = nil, extra: JSONObject = [:], headers: HTTPFields = [:]
    ) {
        self.init(
            code, status: code.status ?? .internalServerError, message: message, field: field, extra: extra, headers: headers)
    }

    /// An error Hummingbird raised with `status`: `not_found`, `method_not_allowed`, `body_too_large`, or
    /// `http_NNN` for any other status.
    init(hummingbirdStatus status: HTTPResponse.Status, message: String? = nil, headers: HTTPFields = [:]) {
        self.init(ErrorCode(hummingbirdStatus: status), status: status, message: message, headers: headers)
    }

    private init(
        _ code: ErrorCode, status: HTTPResponse.Status, message: String?, field: String? = nil, extra: JSONObject = [:],
        headers: HTTPFields
    ) {
        self.code = code
        self.status = status
        self.message = message ?? code.defaultMessage ?? "The request failed: \(status.reasonPhrase)."
        self.field = field
        self.extra = extra
        self.headers = headers
    }

    /// 400 for a field that breaks a rule.
    public static func invalidField(_ field: String, _ message: String) -> APIError {
        APIError(.invalidField, message: message, field: field)
    }

    /// 400 for a body that is not a JSON object.
    public static func malformedJSON(_ detail: String) -> APIError {
        APIError(.malformedJSON, message: "The request body is not a JSON object: \(detail).", field: "$")
    }

    /// 413 for a body over the configured limit.
    public static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.bodyTooLarge, message: "The request body is larger than \(limit) bytes.")
    }

    /// 404 for an unknown USER_ID.
    public static let unknownUser = APIError(.unknownUser, field: "user_id")

    /// 401 when owner credentials are missing.
    public static let ownerCredentialsRequired = APIError(
        .credentialsRequired, headers: [.wwwAuthenticate: #"Basic realm="herald""#])

    /// 403 for a device secret that does not match.
    public static let wrongDeviceSecret = APIError(.wrongDeviceSecret, field: "device_secret")

    /// 429 for a client address locked out after too many failed credential checks (``AuthFailureLimiter``).
    public static func tooManyAuthFailures(retryAfter seconds: Int) -> APIError {
        APIError(
            .tooManyAuthFailures,
            message: "Too many failed authentication attempts from this address; try again in \(seconds) seconds.",
            headers: [.retryAfter: "\(seconds)"])
    }

    /// 429 for a client address that registered too many new devices in a short time (``RegistrationLimiter``).
    public static func registrationRateLimited(retryAfter seconds: Int) -> APIError {
        APIError(
            .registrationRateLimited, message: "Too many registrations from this address; try again in \(seconds) seconds.",
            headers: [.retryAfter: "\(seconds)"])
    }

    /// 503 for a new registration beyond `HERALD_MAX_DEVICES`.
    public static let deviceLimitReached = APIError(.deviceLimitReached)

    /// 401 for a new registration without `X-Herald-Registration-Token` where `HERALD_REGISTRATION_TOKEN` is set.
    public static let registrationTokenRequired = APIError(.registrationTokenRequired)

    /// 403 for a registration token that is not the server's.
    public static let wrongRegistrationToken = APIError(.wrongRegistrationToken)

    /// 404 for a route or resource that does not exist.
    public static func notFound(_ message: String? = nil) -> APIError {
        APIError(.notFound, message: message)
    }

    /// 405 for a method the path does not take; `Allow` lists the ones it does.
    public static func methodNotAllowed(allow: String) -> APIError {
        APIError(
            .methodNotAllowed, message: "This address does not take that method; it takes \(allow).", headers: [.allow: allow])
    }

    /// 503 when the store does not answer (in time: `HERALD_STORE_TIMEOUT_MS`) or cannot write; `Retry-After` says
    /// when to try again. `cause` (the store's error) is logged when the answer goes out, not sent.
    public static func storeUnavailable(_ cause: String) -> APIError {
        var error = APIError(.storeUnavailable, headers: storeRetryAfter)
        error.cause = cause
        return error
    }

    /// 503 `store_unavailable` for a domain service's store failure; its cause is logged, not sent.
    public static func storeUnavailable(_ failure: StoreUnavailable) -> APIError {
        storeUnavailable(failure.cause)
    }

    /// A refusal of PushWard's API with its `code` (`activity.not_found`, `integration_key.slug_invalid`, …), its status
    /// and `detail`; answered as problem details (``ErrorShape/problemDetails``), `extra` merged into the body.
    public static func problem(
        _ code: String, status: HTTPResponse.Status, detail: String, extra: JSONObject = [:], headers: HTTPFields = [:]
    ) -> APIError {
        var members = extra
        members["code"] = .string(code)
        return APIError(.pushWardProblem, status: status, message: detail, extra: members, headers: headers)
    }

    /// `Retry-After` of every 503 `store_unavailable`, in every dialect.
    static let storeRetryAfter: HTTPFields = [.retryAfter: "\(storeRetryAfterSeconds)"]
    static let storeRetryAfterSeconds = 1
}

extension APIError: HTTPResponseError {
    /// The body of ``ErrorShape/standard``, every dialect's but Home Assistant's: `{"error", "code", "field"?, ...extra}`.
    public var body: JSONObject {
        var body = extra
        body["error"] = .string(message)
        if code != .pushWardProblem { body["code"] = .string(code.text(status: status)) }
        if let field { body["field"] = .string(field) }
        return body
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        shape.response(to: self)
    }
}
