import Crypto
import Foundation
import HeraldCore
import Synchronization

/// Voluntary Application Server Identification (RFC 8292): the `Authorization: vapid t=<JWT>,k=<public key>` header
/// that tells a push service which server sends, so that only the server whose key a subscription was made with can
/// push to it.
///
/// The JWT is ES256 over `{"typ":"JWT","alg":"ES256"}` and the claims `{"aud": <the endpoint's origin>, "exp": <Unix
/// seconds>, "sub": <the operator's mailto: or https: contact>}`. One token per origin is cached and reused until
/// ``renewalMargin`` before it expires; it is valid for ``lifetime`` (push services refuse more than 24 hours).
public final class VAPIDSigner: Sendable {
    /// How long a token is valid.
    public static let lifetime: TimeInterval = 12 * 3600
    /// A cached token is replaced this long before it expires.
    public static let renewalMargin: TimeInterval = 3600

    /// The public key in the form `applicationServerKey` takes: base64url of the 65-byte uncompressed point.
    public let publicKey: String
    /// The `sub` claim.
    public let subject: String
    private let key: P256.Signing.PrivateKey
    private let clock: any WallClock
    private let tokens = Mutex<[String: (jwt: String, expiresAt: Date)]>([:])

    /// - Parameter subject: `mailto:…` or `https://…`, checked by ``validSubject(_:)``.
    public init(key: P256.Signing.PrivateKey, subject: String, clock: any WallClock = SystemClock()) {
        self.key = key
        self.subject = subject
        self.clock = clock
        self.publicKey = Base64URL.encode(key.publicKey.x963Representation)
    }

    /// Whether `subject` is a contact RFC 8292 allows: a `mailto:` address or an `https:` URL.
    public static func validSubject(_ subject: String) -> Bool {
        let lowered = subject.lowercased()
        if lowered.hasPrefix("mailto:") { return subject.dropFirst(7).contains("@") }
        if lowered.hasPrefix("https://"), let url = URL(string: subject), url.host?.isEmpty == false { return true }
        return false
    }

    /// The `Authorization` header's value for a request to `endpoint`.
    public func authorization(for endpoint: URL) -> String {
        "vapid t=\(token(audience: Self.origin(of: endpoint))),k=\(publicKey)"
    }

    /// `scheme://host[:port]`, the `aud` a push service expects (RFC 8292 §2).
    public static func origin(of endpoint: URL) -> String {
        let scheme = endpoint.scheme?.lowercased() ?? "https"
        let host = endpoint.host?.lowercased() ?? ""
        let defaultPort = scheme == "https" ? 443 : 80
        let port = endpoint.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)\(port)"
    }

    /// The cached token of `audience`, or a new one when none is left that stays valid past the renewal margin.
    func token(audience: String) -> String {
        let now = clock.now()
        return tokens.withLock { tokens in
            if let cached = tokens[audience], cached.expiresAt.timeIntervalSince(now) > Self.renewalMargin { return cached.jwt }
            let expiresAt = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Self.lifetime).rounded(.down))
            let jwt = sign(audience: audience, expiresAt: expiresAt)
            tokens[audience] = (jwt, expiresAt)
            return jwt
        }
    }

    private func sign(audience: String, expiresAt: Date) -> String {
        ES256JWT.sign(
            header: ["typ": "JWT", "alg": "ES256"],
            claims: ["aud": .string(audience), "exp": .int(Int(expiresAt.timeIntervalSince1970)), "sub": .string(subject)], with: key)
    }
}
