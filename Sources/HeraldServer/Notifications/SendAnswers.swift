import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import Hummingbird

/// The parts of a send answer every send API shares: the `rateLimits` object, the `RateLimit-*` headers,
/// and the mapping of the pipeline's `SendError` to `APIError`.
enum SendAnswers {
    /// `{"attempts", "successful", "errors", "total", "maximum", "remaining", "resetsAt"}`, counts as integers,
    /// `resetsAt` as ISO-8601 UTC with milliseconds (the shape Home Assistant parses).
    static func rateLimits(_ quota: QuotaStatus) -> JSONValue {
        [
            "attempts": .int(quota.counters.attempts), "successful": .int(quota.counters.successful),
            "errors": .int(quota.counters.errors), "total": .int(quota.counters.total), "maximum": .int(quota.maximum),
            "remaining": .int(quota.remaining), "resetsAt": .string(quota.resetsAt.iso8601WithMilliseconds),
        ]
    }

    /// `rateLimits` as the 201s write it, member by member (``JSONObjectWriter``): the same bytes as
    /// ``rateLimits(_:)``, which the refusals use (a test holds the two together).
    static func rateLimitsObject(_ quota: QuotaStatus) -> JSONObjectWriter {
        var object = JSONObjectWriter(capacity: 160)
        object.add("attempts", .int(quota.counters.attempts))
        object.add("errors", .int(quota.counters.errors))
        object.add("maximum", .int(quota.maximum))
        object.add("remaining", .int(quota.remaining))
        object.add("resetsAt", .string(quota.resetsAt.iso8601WithMilliseconds))
        object.add("successful", .int(quota.counters.successful))
        object.add("total", .int(quota.counters.total))
        return object
    }

    /// The answer to an accepted send, the same for every send API but Home Assistant's:
    /// 201 `{"id", "status", "truncated", "rateLimits", "warning"?}` with the `RateLimit-*` headers. Written member by
    /// member, in key order, as every accepted notification is answered (docs/performance.md, "Ids as text").
    ///
    /// `pushWard` adds PushWard's fan-out members (`POST /notifications`): `delivery` (`all` once the provider took it,
    /// `none` while it is queued: Herald sends to one device) and `pushed` (whether it reached the device's provider).
    static func created(_ receipt: SendReceipt, now: Date, pushWard: Bool = false) -> Response {
        var body = JSONObjectWriter()
        let delivered = receipt.notification.status == .delivered
        if pushWard { body.add("delivery", .string(delivered ? "all" : "none")) }
        body.add("id", .string(receipt.notification.id.lowercasedText))
        if pushWard { body.add("pushed", .bool(delivered)) }
        body.add("rateLimits", rateLimitsObject(receipt.quota))
        body.add("status", .string(receipt.statusWord))
        body.add("truncated", .bool(receipt.truncated))
        if let warning = receipt.warning { body.add("warning", .string(warning)) }
        return JSONResponse.make(status: .created, body: body, headers: headers(receipt.quota, now: now))
    }

    /// Runs the part of a send that comes after the device is identified. A refusal from there on (an invalid field,
    /// 410, 502, Home Assistant's 500, …) carries the device's `RateLimit-*` headers like the 201 and the 429 do; a
    /// refusal before it (malformed body, unknown USER_ID, 413) has no quota to report. The quota is read again only
    /// for a refusal that does not carry it already.
    static func withRateLimitHeaders(
        of device: Device, pipeline: SendPipeline, clock: any WallClock, _ send: () async throws -> Response
    ) async throws -> Response {
        do {
            return try await send()
        } catch var error as APIError {
            // Only a refusal before the accept (an inactive device, a payload that cannot fit) lacks the quota: a refusal
            // after it carries the quota it left. Not when the store failed: asking it again would only make the answer
            // wait for a second deadline.
            if error.headers[.rateLimitLimit] == nil, error.code != .storeUnavailable, let quota = try? await pipeline.quota(of: device) {
                error.headers.append(contentsOf: headers(quota, now: clock.now()))
            }
            throw error
        }
    }

    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds until the reset).
    static func headers(_ quota: QuotaStatus, now: Date) -> HTTPFields {
        [
            .rateLimitLimit: "\(quota.maximum)", .rateLimitRemaining: "\(quota.remaining)",
            .rateLimitReset: "\(secondsUntilReset(quota, now: now))",
        ]
    }

    static func secondsUntilReset(_ quota: QuotaStatus, now: Date) -> Int {
        max(0, Int(quota.resetsAt.timeIntervalSince(now).rounded(.up)))
    }

    /// A 429 for one of the USER_ID's limits: `rateLimits`, the `RateLimit-*` headers and `Retry-After`.
    private static func limitError(_ code: ErrorCode, _ quota: QuotaStatus, retryAfter: Int, now: Date, _ message: String) -> APIError {
        var headers = Self.headers(quota, now: now)
        headers[.retryAfter] = "\(retryAfter)"
        return APIError(code, message: message, extra: ["rateLimits": rateLimits(quota)], headers: headers)
    }

    /// Seconds a sender refused for a full backlog is asked to wait.
    static let backlogRetryAfter = 60

    /// The APIError (default shape) for a refused send.
    static func apiError(_ error: SendError, now: Date) -> APIError {
        switch error {
        case .deviceInactive(let reason), .deadTokenDetected(_, let reason, _):
            var extra: JSONObject = ["reason": .string(reason)]
            var headers = HTTPFields()
            if case .deadTokenDetected(let id, _, let quota) = error {
                extra["id"] = .string(id.lowercasedText)
                headers = Self.headers(quota, now: now)
            }
            return APIError(
                .deviceMustReregister,
                message: "The device's push token is no longer valid (\(reason)); the app must register again.", extra: extra,
                headers: headers)
        case .quotaExceeded(let quota):
            return limitError(
                .rateLimited, quota, retryAfter: secondsUntilReset(quota, now: now), now: now,
                "This USER_ID has used its \(quota.maximum) notifications for today; the limit resets at \(quota.resetsAt.iso8601WithMilliseconds).")
        case .exemptQuotaExceeded(let quota, let exemptMaximum):
            return limitError(
                .exemptLimitReached, quota, retryAfter: secondsUntilReset(quota, now: now), now: now,
                "This USER_ID has had its \(exemptMaximum) critical alerts and commands for today (they have a daily limit of their own); it resets at \(quota.resetsAt.iso8601WithMilliseconds).")
        case .backlogFull(let quota, let maximumPending):
            return limitError(
                .backlogFull, quota, retryAfter: backlogRetryAfter, now: now,
                "This USER_ID already has \(maximumPending) notifications waiting for delivery; try again once its device has taken some.")
        case .payloadTooLarge(let minimum, let limit):
            return APIError(
                .payloadTooLarge,
                message: "The notification does not fit the push service's \(limit)-byte limit even with the body shortened away (\(minimum) bytes).",
                field: "$")
        case .rejectedByProvider(let id, let reason, let quota):
            return APIError(
                .rejectedByProvider, message: "The push service refused the notification: \(reason).",
                extra: ["id": .string(id.lowercasedText), "reason": .string(reason)], headers: headers(quota, now: now))
        case .storeUnavailable(let cause):
            return APIError.storeUnavailable(cause)
        case .payloadNotEncodable(let cause):
            var apiError = APIError(.internalError, message: "Herald could not write the notification as JSON; it was not sent.")
            apiError.cause = cause
            return apiError
        }
    }
}

extension HTTPField.Name {
    static let rateLimitLimit = HTTPField.Name("RateLimit-Limit")!
    static let rateLimitRemaining = HTTPField.Name("RateLimit-Remaining")!
    static let rateLimitReset = HTTPField.Name("RateLimit-Reset")!
}
