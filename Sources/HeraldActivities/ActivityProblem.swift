import HeraldCore

/// An error of PushWard's activity API, as an RFC 9457 problem detail with PushWard's stable `code`.
///
/// Every refusal of the activity paths is one of these; the server answers it with `application/problem+json` and
/// the body ``body(instance:)`` writes, which is exactly PushWard's `Problem` schema (`type`, `title`, `status`,
/// `detail`, `code`, and where they apply `instance`, `retry_after_ms` and `errors`).
///
/// ```swift
/// throw ActivityProblem.contentInvalid("progress must be between 0.0 and 1.0, got 1.500000")
/// // 422 {"code":"activity.content_invalid","detail":"progress must …","status":422,"title":"Unprocessable Entity","type":"about:blank"}
/// ```
public struct ActivityProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// PushWard's stable programmatic identifier (`activity.not_found`, `slug.invalid`, …).
    public var code: Code
    /// The HTTP status of the answer.
    public var status: Int
    /// The human-readable explanation of this occurrence.
    public var detail: String
    /// Suggested retry delay in milliseconds (`retry_after_ms`; also the `Retry-After` header, rounded up to seconds).
    public var retryAfterMilliseconds: Int?
    /// Per-field validation errors (`errors`), when there are any.
    public var fieldErrors: [FieldError]
    /// What the answer does not say and the log does (a store's error), as ``APIError``'s `cause` in HeraldServer.
    public var cause: String?

    public init(code: Code, status: Int, detail: String, retryAfterMilliseconds: Int? = nil, fieldErrors: [FieldError] = []) {
        self.code = code
        self.status = status
        self.detail = detail
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.fieldErrors = fieldErrors
    }

    /// The short summary of the status (`title`): the HTTP reason phrase, as PushWard writes it.
    public var title: String { Self.reasonPhrase(status) }

    public var description: String { "\(status) \(code.rawValue): \(detail)" }

    /// The `Retry-After` header's value in whole seconds, when the problem carries a retry delay.
    public var retryAfterSeconds: Int? { retryAfterMilliseconds.map { ($0 + 999) / 1_000 } }

    /// The `application/problem+json` body: PushWard's `Problem` schema, keys sorted.
    /// - Parameter instance: the request's id as a URI reference (`/requests/<id>`), when the server has one.
    public func body(instance: String? = nil) -> [UInt8] {
        var body = JSONObjectWriter()
        body.add("code", .string(code.rawValue))
        body.add("detail", .string(detail))
        if !fieldErrors.isEmpty {
            body.add(
                "errors",
                .array(
                    fieldErrors.map { error in
                        var object: JSONObject = ["message": .string(error.message)]
                        if let location = error.location { object["location"] = .string(location) }
                        if let value = error.value { object["value"] = value }
                        return .object(object)
                    }))
        }
        if let instance { body.add("instance", .string(instance)) }
        if let retryAfterMilliseconds { body.add("retry_after_ms", .int(retryAfterMilliseconds)) }
        body.add("status", .int(status))
        body.add("title", .string(title))
        body.add("type", .string("about:blank"))
        return body.finished()
    }

    /// One entry of `errors`: where a request was wrong and why.
    public struct FieldError: Sendable, Equatable {
        /// Where, e.g. `body.content.tiles[4]`.
        public var location: String?
        /// Why.
        public var message: String
        /// The value found there.
        public var value: JSONValue?

        public init(location: String?, message: String, value: JSONValue? = nil) {
            self.location = location
            self.message = message
            self.value = value
        }
    }

    /// PushWard's `code` values. Open (a struct over its text), so that a code this type does not name yet can still
    /// be carried.
    public struct Code: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }

        /// 404: no activity with that slug for this device.
        public static let activityNotFound: Code = "activity.not_found"
        /// 409: the device already holds the most activities it may (50).
        public static let activityLimitExceeded: Code = "activity.limit_exceeded"
        /// 422: content that breaks its template's rules, or an unknown template.
        public static let activityContentInvalid: Code = "activity.content_invalid"
        /// 400: a `state` that is not `ongoing` or `ended` (or, as a list filter, `preempted`).
        public static let activityStateInvalid: Code = "activity.state_invalid"
        /// 400: a `priority` outside 0–10.
        public static let activityPriorityInvalid: Code = "activity.priority_invalid"
        /// 403: `?upsert=true` for a missing slug with a token that may not create activities.
        public static let activityUpsertForbidden: Code = "activity.upsert_forbidden"
        /// 403: a shared viewer may not modify (PushWard's; Herald has no sharing and never raises it).
        public static let activityViewerForbidden: Code = "activity.viewer_forbidden"
        /// 409: the activity cannot start on the phone because the device has no push-to-start token (Herald's own).
        public static let activityPushToStartUnavailable: Code = "activity.push_to_start_unavailable"
        /// 400: a slug that does not match `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$`.
        public static let slugInvalid: Code = "slug.invalid"
        /// 400: an `after` cursor the server did not issue.
        public static let cursorInvalid: Code = "cursor.invalid"
        /// 400: a body that is not JSON or has the wrong shape.
        public static let requestBodyInvalid: Code = "request.body_invalid"
        /// 400: no body where one is needed.
        public static let requestBodyRequired: Code = "request.body_required"
        /// 400/422: a query parameter out of range (`limit`), Herald's name for what PushWard leaves without a code.
        public static let requestQueryInvalid: Code = "request.query_invalid"
        /// 403: the token's slug patterns do not allow this slug.
        public static let integrationKeySlugInvalid: Code = "integration_key.slug_invalid"
        /// 403: the token lacks the scope the path needs (Herald's name; PushWard answers 403 without naming one).
        /// 401: no token or an unknown one.
        public static let tokenInvalid: Code = "token.invalid"
        /// 429: too many requests.
        public static let rateLimitExceeded: Code = "rate_limit.exceeded"
        /// 429: the daily allowance is used up.
        public static let quotaExceeded: Code = "quota.exceeded"
        /// 503: the store or another dependency is not answering.
        public static let serviceUnavailable: Code = "service.unavailable"
        /// 404 on `GET /auth/me`: the token's device is gone.
        public static let userNotFound: Code = "user.not_found"
        /// 400 on `POST /notifications`: a notification the API refuses.
        public static let notificationInvalid: Code = "notification.invalid"
        /// 422 on `POST /notifications`: `activity_slug` names no activity of the device.
        public static let notificationActivityNotFound: Code = "notification.activity_not_found"
        // PushWard's codes for what Herald does not have (sharing, subscriptions, widgets, email, the demo) are left
        // out: `activity.viewer_forbidden` stays above because openapi.yaml lists it on the activity paths.
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Entity"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}

extension ActivityProblem {
    /// 404 `activity.not_found`.
    public static let notFound = ActivityProblem(code: .activityNotFound, status: 404, detail: "activity not found")
    /// 400 `request.body_required`.
    public static let bodyRequired = ActivityProblem(code: .requestBodyRequired, status: 400, detail: "request body is required")
    /// 400 `slug.invalid`.
    public static let slugInvalid = ActivityProblem(code: .slugInvalid, status: 400, detail: "invalid slug format")
    /// 400 `cursor.invalid`.
    public static let cursorInvalid = ActivityProblem(code: .cursorInvalid, status: 400, detail: "invalid cursor")
    /// 400 `activity.priority_invalid`.
    public static let priorityInvalid = ActivityProblem(code: .activityPriorityInvalid, status: 400, detail: "priority must be between 0 and 10")
    /// 403 `integration_key.slug_invalid`.
    public static let slugNotAllowed = ActivityProblem(code: .integrationKeySlugInvalid, status: 403, detail: "key not allowed for this activity")
    /// 403 `activity.upsert_forbidden`.
    public static let upsertForbidden = ActivityProblem(
        code: .activityUpsertForbidden, status: 403, detail: "upsert requires activity:manage scope or full access")
    /// 401 `token.invalid`.
    public static let tokenInvalid = ActivityProblem(code: .tokenInvalid, status: 401, detail: "invalid token")
    /// 503 `service.unavailable`.
    public static let serviceUnavailable = ActivityProblem(code: .serviceUnavailable, status: 503, detail: "service temporarily unavailable")

    /// 503 `service.unavailable` for a store failure: `cause` (the store's error) is logged when the answer goes out.
    public static func serviceUnavailable(cause: String) -> ActivityProblem {
        var problem = serviceUnavailable
        problem.cause = cause
        return problem
    }

    /// 409 `activity.limit_exceeded`, with a retry delay as PushWard gives one.
    public static func limitExceeded(maximum: Int) -> ActivityProblem {
        ActivityProblem(code: .activityLimitExceeded, status: 409, detail: "activity limit reached (max \(maximum))", retryAfterMilliseconds: 3_000)
    }

    /// 422 `activity.content_invalid`.
    public static func contentInvalid(_ detail: String, location: String? = nil) -> ActivityProblem {
        ActivityProblem(
            code: .activityContentInvalid, status: 422, detail: detail,
            fieldErrors: location.map { [FieldError(location: $0, message: detail)] } ?? [])
    }

    /// 422 `request.body_invalid` for a value that is well-formed but out of range (a TTL, a name).
    public static func fieldInvalid(_ detail: String, location: String) -> ActivityProblem {
        ActivityProblem(code: .requestBodyInvalid, status: 422, detail: detail, fieldErrors: [FieldError(location: location, message: detail)])
    }

    /// 400 `activity.state_invalid`.
    public static func stateInvalid(_ value: String, allowed: String = "ongoing, ended") -> ActivityProblem {
        ActivityProblem(code: .activityStateInvalid, status: 400, detail: "invalid activity state: \"\(value)\", must be one of \(allowed)")
    }

    /// 400 `request.body_invalid`: not JSON, or the wrong shape.
    public static func bodyInvalid(_ detail: String, location: String? = nil) -> ActivityProblem {
        ActivityProblem(
            code: .requestBodyInvalid, status: 400, detail: detail,
            fieldErrors: location.map { [FieldError(location: $0, message: detail)] } ?? [])
    }

    /// 409 `activity.push_to_start_unavailable`: a transition to `ongoing` for a device that cannot be started.
    public static let pushToStartUnavailable = ActivityProblem(
        code: .activityPushToStartUnavailable, status: 409,
        detail: "the device has no live_activity_push_to_start_token: register it again with one to start Live Activities")

    /// 429 `rate_limit.exceeded`.
    public static func rateLimited(retryAfterMilliseconds: Int) -> ActivityProblem {
        ActivityProblem(code: .rateLimitExceeded, status: 429, detail: "rate limit exceeded", retryAfterMilliseconds: retryAfterMilliseconds)
    }

    /// 429 `quota.exceeded`.
    public static func quotaExceeded(_ detail: String, retryAfterMilliseconds: Int) -> ActivityProblem {
        ActivityProblem(code: .quotaExceeded, status: 429, detail: detail, retryAfterMilliseconds: retryAfterMilliseconds)
    }
}
