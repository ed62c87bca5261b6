import Foundation

/// The `errorCode` values of FCM's `google.firebase.fcm.v1.FcmError` detail (reference §3).
public enum FCMErrorCode: String, Sendable, CaseIterable {
    /// No more information is available (answered `500 UNKNOWN` by the double).
    case unspecifiedError = "UNSPECIFIED_ERROR"
    /// `400 INVALID_ARGUMENT`: something in the request is wrong.
    case invalidArgument = "INVALID_ARGUMENT"
    /// `404 NOT_FOUND`: the registration token is no longer valid.
    case unregistered = "UNREGISTERED"
    /// `403 PERMISSION_DENIED`: the token belongs to another sender.
    case senderIDMismatch = "SENDER_ID_MISMATCH"
    /// `429 RESOURCE_EXHAUSTED`: a message, device or topic rate is too high.
    case quotaExceeded = "QUOTA_EXCEEDED"
    /// `503 UNAVAILABLE`: overloaded.
    case unavailable = "UNAVAILABLE"
    /// `500 INTERNAL`.
    case `internal` = "INTERNAL"
    /// `401 UNAUTHENTICATED`: the APNs certificate or key, or the web-push key, is invalid.
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"

    /// The HTTP status FCM answers with this code.
    public var httpStatus: Int { GoogleError.fcm(self, projectID: "").code }
}

extension FCMDouble {
    /// Something the double does instead of its normal answer to a send request that passed validation.
    enum Fault: Sendable, Equatable {
        /// Answer with this FcmError code (and its canonical status), with `retry-after` if given.
        case error(FCMErrorCode, retryAfter: Int?)
        /// Accept the request and never answer it.
        case stall
        /// Close the TCP connection at once, without TLS close_notify or GOAWAY.
        case dropConnection
    }

    /// A per-registration-token state, checked after the message's own validation.
    enum TokenMark: Sendable, Equatable {
        case unregistered
        case senderIDMismatch
        case invalid
    }

    // MARK: Registration tokens

    /// From now on, messages to `token` are answered `404 NOT_FOUND` with errorCode `UNREGISTERED`.
    public func markUnregistered(_ token: String) {
        core.mark(token, as: .unregistered)
    }

    /// From now on, messages to `token` are answered `403 PERMISSION_DENIED` with errorCode `SENDER_ID_MISMATCH`.
    public func markSenderMismatch(_ token: String) {
        core.mark(token, as: .senderIDMismatch)
    }

    /// From now on, messages to `token` are answered `400 INVALID_ARGUMENT` ("The registration token is not a valid
    /// FCM registration token"), errorCode `INVALID_ARGUMENT` and a BadRequest naming `message.token`.
    public func markInvalid(_ token: String) {
        core.mark(token, as: .invalid)
    }

    /// Removes a token's mark.
    public func unmark(_ token: String) {
        core.mark(token, as: nil)
    }

    // MARK: Next requests

    /// The next `count` send requests that pass validation are answered with `error`'s canonical status and body
    /// (`QUOTA_EXCEEDED` → 429 RESOURCE_EXHAUSTED, `UNAVAILABLE` → 503, `INTERNAL` → 500…), with a `retry-after`
    /// header of `retryAfter` seconds when given. Faults are used first in, first out.
    public func failNext(_ count: Int = 1, _ error: FCMErrorCode, retryAfter: Int? = nil) {
        core.inject(.error(error, retryAfter: retryAfter), count: count)
    }

    /// The next send request that passes validation is answered with `error` (``failNext(_:_:retryAfter:)`` with a
    /// count of 1; Swift cannot leave out a first unlabeled argument before a second one).
    public func failNext(_ error: FCMErrorCode, retryAfter: Int? = nil) {
        failNext(1, error, retryAfter: retryAfter)
    }

    /// The next `count` send requests that pass validation are never answered.
    public func stallNext(_ count: Int = 1) {
        core.inject(.stall, count: count)
    }

    /// The next send request that passes validation makes the double close its TCP connection without answering.
    public func dropConnectionOnNextRequest() {
        core.inject(.dropConnection, count: 1)
    }

    /// Drops every queued send fault and token-endpoint failure.
    public func clearFaults() {
        core.clearFaults()
    }

    /// Delays every answer, of both endpoints, by `delay` (`nil` for none).
    public func setResponseDelay(_ delay: Duration?) {
        core.setResponseDelay(delay)
    }

    // MARK: Access tokens

    /// Every access token issued so far becomes invalid: sends with them are answered `401 UNAUTHENTICATED`.
    public func revokeAccessTokens() {
        core.revokeAccessTokens()
    }

    /// The lifetime (`expires_in`) of the access tokens issued from now on.
    public func setAccessTokenLifetime(_ seconds: TimeInterval) {
        core.setAccessTokenLifetime(seconds)
    }

    /// The next `count` token requests that pass validation are refused with `status` and an OAuth error body
    /// (`server_error` for 500, `temporarily_unavailable` for 503, `invalid_request` otherwise).
    public func failNextTokenRequests(_ count: Int, status: Int = 500) {
        core.failNextTokenRequests(count, status: status)
    }
}
