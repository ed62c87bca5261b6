import HTTPTypes
import HeraldCore

extension ErrorShape {
    /// RFC 9457 problem details (`application/problem+json`) as PushWard's API answers them (its `openapi.yaml`,
    /// `Problem`): `type`, `title`, `status`, `detail`, and PushWard's stable `code` where it has one; `retry_after_ms`
    /// beside `Retry-After`; `errors` naming the offending field of a 400. The shape of `/activities`, `/auth/me` and
    /// `/health`, and of requests under `/activities` that no route took.
    ///
    /// `type` is `about:blank` (the status says it all; PushWard's clients match on `code`), so `title` is the status's
    /// reason phrase.
    static let problemDetails = ErrorShape(
        name: "problem", unroutedPathPrefix: "/activities", contentType: "application/problem+json"
    ) { error in
        var body = error.extra
        body["type"] = .string("about:blank")
        body["title"] = .string(error.status.reasonPhrase)
        body["status"] = .int(error.status.code)
        body["detail"] = .string(error.message)
        if body["code"] == nil, let code = pushWardCode(of: error) { body["code"] = .string(code) }
        if let field = error.field, error.status == .badRequest {
            body["errors"] = .array([.object(["location": .string("body.\(field)"), "message": .string(error.message)])])
        }
        if let seconds = error.headers[.retryAfter].flatMap(Int.init) { body["retry_after_ms"] = .int(seconds * 1000) }
        return body
    }

    /// PushWard's code for a refusal Herald raises on every path (an unknown token, a malformed body, the store away).
    private static func pushWardCode(of error: APIError) -> String? {
        switch error.code {
        case .tokenRequired, .invalidToken: "token.invalid"
        case .malformedJSON, .invalidField, .bodyTooLarge, .unknownField: "request.body_invalid"
        case .activityNotFound: "notification.activity_not_found"
        case .alreadyAnswered: "notification.already_answered"
        case .unknownUser: "user.not_found"
        case .storeUnavailable, .tooManyConnections: "service.unavailable"
        case .rateLimited, .tooManyAuthFailures, .exemptLimitReached, .backlogFull: "rate_limit.exceeded"
        default: nil
        }
    }
}
