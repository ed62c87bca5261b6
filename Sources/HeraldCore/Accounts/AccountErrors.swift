/// Why ``DeviceRegistrar`` or ``RegistrationLimiter`` refused a registration. The HTTP API maps each case to its answer
/// in one place (`APIError.init(registration:)`), with sentences that name its headers.
public enum RegistrationError: Error, Sendable, Equatable {
    /// The operator set a registration token and the registration carries none.
    case registrationTokenRequired
    /// The registration carries a token that is not the operator's.
    case wrongRegistrationToken
    /// The client registered too many new devices in a short time; one is allowed again after `retryAfterSeconds`.
    case rateLimited(retryAfterSeconds: Int)
    /// The server has `maximum` devices (`HERALD_MAX_DEVICES`); no new one may register.
    case deviceLimitReached(maximum: Int)
    /// The device already named `maximum` distinct Web Push endpoints in the last 24 hours (``EndpointChangeLimiter``).
    case endpointLimitReached(maximum: Int, retryAfterSeconds: Int)
    case storeUnavailable(StoreUnavailable)
}

/// Why ``APITokenManager`` refused to issue, revoke or accept an API token. ``description`` is the sentence every
/// ingress says (the HTTP answer's `error`, `herald token`'s line), except where HTTP names its own headers.
public enum APITokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name breaks a rule; the sentence says which.
    case invalidName(String)
    /// `scopes` or `slugs` (the field) breaks a rule; the sentence says which.
    case invalidGrant(String, String)
    /// The device already has an active token of this (trimmed) name.
    case nameTaken(String)
    /// The device already has `maximum` active tokens.
    case tooManyTokens(maximum: Int)
    /// The device has no active token with this id or name.
    case notFound
    /// No token was given.
    case tokenRequired
    /// The token is not well formed, not known, or its device is gone.
    case invalidToken
    /// The token was revoked.
    case revokedToken
    case storeUnavailable(StoreUnavailable)

    public var description: String {
        switch self {
        case .invalidName(let sentence): sentence
        case .invalidGrant(_, let sentence): sentence
        case .nameTaken(let name):
            "This device already has an active API token named \"\(name)\"; revoke it first or choose another name."
        case .tooManyTokens(let maximum): "This device already has \(maximum) active API tokens; revoke one first."
        case .notFound: "This device has no active API token with this id or name."
        case .tokenRequired: "An API token is required."
        case .invalidToken: "The API token is not valid."
        case .revokedToken: "The API token was revoked."
        case .storeUnavailable(let failure): failure.description
        }
    }
}

/// Why ``DailyLimits`` did not change a device's daily limit; ``description`` is `herald limits`' line.
public enum DailyLimitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A limit below 1.
    case limitBelowOne
    /// No device is registered under the USER_ID.
    case unknownUser
    case storeUnavailable(StoreUnavailable)

    public var description: String {
        switch self {
        case .limitBelowOne: "the limit must be at least 1"
        case .unknownUser: "no device is registered under this USER_ID"
        case .storeUnavailable(let failure): failure.description
        }
    }
}
