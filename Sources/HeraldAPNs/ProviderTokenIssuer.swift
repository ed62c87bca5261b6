// Hand-written: a compact ES256 JWT (two fixed JSON objects, one P-256 signature from swift-crypto, which Herald uses
// anyway) instead of a JWT library such as vapor/jwt-kit. No measured figure keeps it: the reason is one dependency
// less for twenty lines, and the issuer's caching rules (Apple's 20-minute minimum, one early renewal) that a library
// would not provide. Replace it when Herald takes a JWT library for another reason.

import Crypto
import Foundation
import HeraldCore
import Synchronization

/// Mints and caches the APNs provider token: an ES256 JWT sent as `authorization: bearer <jwt>`.
///
/// The header is `{"alg":"ES256","kid":<key id>}`, the claims exactly `{"iat":<integer seconds>,"iss":<team id>}`,
/// the signature the raw 64-byte r‖s of the `.p8` P-256 key, every part base64url without padding.
///
/// One token is shared by every connection. It is renewed once it is older than the refresh interval
/// (default 50 minutes, never less than 20: APNs answers `TooManyProviderTokenUpdates` to tokens renewed more often).
/// The only earlier renewal is ``renewAfterExpiry(of:)``, once per token, after APNs said `ExpiredProviderToken`
/// (e.g. because the clocks disagree).
///
/// ```swift
/// let issuer = ProviderTokenIssuer(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
/// request.headers.add(name: "authorization", value: "bearer \(issuer.currentToken().jwt)")
/// ```
public final class ProviderTokenIssuer: Sendable {
    /// One minted provider token.
    public struct Token: Sendable, Equatable {
        /// The compact JWT. A secret: never log more than a short prefix.
        public let jwt: String
        /// Its `iat` claim.
        public let issuedAt: Date
        /// Whether it was minted by ``ProviderTokenIssuer/renewAfterExpiry(of:)``.
        public let isEarlyRenewal: Bool
    }

    /// Apple: refresh "no more than once every 20 minutes".
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    /// The default age at which a token is renewed; Apple rejects tokens older than an hour.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)

    /// The refresh interval actually used for a requested one (raised to ``minimumRefreshInterval``).
    public static func effectiveRefreshInterval(_ requested: Duration) -> Duration {
        max(requested, minimumRefreshInterval)
    }

    /// The `kid` of the tokens.
    public let keyID: String
    /// The `iss` of the tokens.
    public let teamID: String
    private let key: P256.Signing.PrivateKey
    private let refreshInterval: TimeInterval
    private let clock: any WallClock
    private let current = Mutex<Token?>(nil)

    /// Creates an issuer; no token is minted until one is asked for.
    public init(
        key: P256.Signing.PrivateKey, keyID: String, teamID: String,
        refreshInterval: Duration = ProviderTokenIssuer.defaultRefreshInterval,
        clock: any WallClock = SystemClock()
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        let interval = Self.effectiveRefreshInterval(refreshInterval).components
        self.refreshInterval = TimeInterval(interval.seconds) + TimeInterval(interval.attoseconds) / 1e18
        self.clock = clock
    }

    /// The token to send now: the cached one, or a new one if the cached one reached the refresh interval.
    public func currentToken() -> Token {
        let now = clock.now()
        return current.withLock { current in
            if let token = current, now.timeIntervalSince(token.issuedAt) < refreshInterval {
                return token
            }
            let token = mint(at: now, isEarlyRenewal: false)
            current = token
            return token
        }
    }

    /// Renews the token early after APNs answered `403 ExpiredProviderToken` to `rejected`.
    ///
    /// - Returns: the token to resend with: a new one, or the current one when another request already renewed
    ///   `rejected`; `nil` when `rejected` was itself an early renewal (allowed once), so the caller should give up
    ///   for now.
    public func renewAfterExpiry(of rejected: Token) -> Token? {
        let now = clock.now()
        return current.withLock { current in
            if let token = current, token != rejected { return token }
            if rejected.isEarlyRenewal { return nil }
            let token = mint(at: now, isEarlyRenewal: true)
            current = token
            return token
        }
    }

    private func mint(at date: Date, isEarlyRenewal: Bool) -> Token {
        let issuedAt = Int(date.timeIntervalSince1970.rounded(.down))
        // An empty signature (the system's random source failed) makes APNs answer InvalidProviderToken.
        let jwt = ES256JWT.sign(
            header: ["alg": "ES256", "kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": .int(issuedAt)], with: key)
        return Token(jwt: jwt, issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt)), isEarlyRenewal: isEarlyRenewal)
    }
}
