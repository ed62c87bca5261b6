import HTTPTypes
import HeraldCore

extension APIError {
    /// The answer to a refused registration, in one place: 401 / 403 for the registration token, 429 with
    /// `Retry-After` for the client's registration rate (new devices, and re-registrations that change the token) and for
    /// a device's distinct Web Push endpoints (naming `subscription.endpoint`), 503 for the device cap and for the store.
    init(registration error: RegistrationError) {
        switch error {
        case .registrationTokenRequired: self = .registrationTokenRequired
        case .wrongRegistrationToken: self = .wrongRegistrationToken
        case .rateLimited(let seconds): self = .registrationRateLimited(retryAfter: seconds)
        case .deviceLimitReached: self = .deviceLimitReached
        case .endpointLimitReached(let maximum, let seconds): self = .endpointLimitReached(maximum: maximum, retryAfter: seconds)
        case .storeUnavailable(let failure): self = .storeUnavailable(failure)
        }
    }
}

extension APIError {
    /// 429 naming `subscription.endpoint`: the device named too many distinct Web Push endpoints in 24 hours
    /// (``EndpointChangeLimiter``).
    static func endpointLimitReached(maximum: Int, retryAfter seconds: Int) -> APIError {
        APIError(
            .registrationRateLimited,
            message: "This device already named \(maximum) distinct Web Push endpoints (subscription.endpoint) in 24 hours; "
                + "try again in \(seconds) seconds.",
            field: "subscription.endpoint", headers: [.retryAfter: "\(seconds)"])
    }
}
