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
        /// What the double remembers of the traffic: the full activity log (the default, for tests) or only
        /// ``APNsDouble/counters`` (for benchmarks, where a log of every request costs time and memory).
        public var activityLog: ActivityLog = .full
        /// Called for every answer when it is written, with its status and `apns-id`; benchmarks time deliveries
        /// with it. It runs on the connection's event loop: keep it short.
        public var answerObserver: (@Sendable (_ status: Int, _ apnsID: String) -> Void)? = nil

        /// The defaults described on each property.
        public init() {}
    }

    /// What the double keeps of the requests it receives.
    public enum ActivityLog: Sendable, Equatable {
        /// Every request and connection event: ``APNsDouble/requests``, ``APNsDouble/acceptedPushes``,
        /// ``APNsDouble/connectionEvents`` (and ``APNsDouble/counters``).
        case full
        /// Only ``APNsDouble/counters``; the request and event lists stay empty.
        case countersOnly
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
