extension APNsDouble {
    /// How strictly the double reads Apple's sometimes ambiguous rules.
    public struct Options: Sendable {
        /// MAX_CONCURRENT_STREAMS announced once a connection has sent a valid provider token (before that: 1).
        public var maxConcurrentStreams: Int = 1_000
        /// How the 20-minute token-update rule is judged.
        public var tokenUpdateRule: TokenUpdateRule = .strict
        /// How far in the future a token's `iat` may be before it is `InvalidProviderToken`.
        public var allowedClockSkew: Double = 60
        /// The accepted lengths of a device token, in hex characters ("don't assume a specific size").
        public var deviceTokenLengths: ClosedRange<Int> = 64...200
        /// Per-device-token rate limit answering `429 TooManyRequests`; `nil` for none.
        public var perDeviceTokenLimit: RateLimit? = RateLimit(requests: 100, perSeconds: 10)
        /// Answer `400 InvalidPushType` instead of a warning when `apns-push-type` is missing
        /// or the payload does not fit it.
        public var requirePushType: Bool = false

        /// The defaults described on each property.
        public init() {}
    }

    /// How the double decides that a connection switched provider tokens too often (`429 TooManyProviderTokenUpdates`).
    public enum TokenUpdateRule: Sendable, Equatable {
        /// A different token within 20 minutes of the first use of the connection's current token is refused
        /// (the first token on a connection is free). Catches clients that mint a token per request.
        case strict
        /// A different token whose `iat` is less than 20 minutes after the current token's `iat` is refused.
        case lenient
    }

    /// At most `requests` requests in any `perSeconds`-second window (by the double's clock).
    public struct RateLimit: Sendable, Equatable {
        /// The number of requests allowed in a window.
        public var requests: Int
        /// The window's length in seconds.
        public var perSeconds: Double

        /// Creates a limit.
        public init(requests: Int, perSeconds: Double) {
            self.requests = requests
            self.perSeconds = perSeconds
        }
    }
}
