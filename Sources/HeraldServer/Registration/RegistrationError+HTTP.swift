import HeraldCore

extension APIError {
    /// The answer to a refused registration, in one place: 401 / 403 for the registration token, 429 with
    /// `Retry-After` for the client's registration rate, 503 for the device cap and for the store.
    init(registration error: RegistrationError) {
        switch error {
        case .registrationTokenRequired: self = .registrationTokenRequired
        case .wrongRegistrationToken: self = .wrongRegistrationToken
        case .rateLimited(let seconds): self = .registrationRateLimited(retryAfter: seconds)
        case .deviceLimitReached: self = .deviceLimitReached
        case .storeUnavailable(let failure): self = .storeUnavailable(failure)
        }
    }
}
