import Crypto
import Foundation
import HeraldCore
import HeraldProviderKit

/// Everything the Web Push provider needs to know: the VAPID key and contact, which push services it may reach, and
/// its deadlines.
///
/// The provider is configured once ``subject`` is set (`HERALD_VAPID_SUBJECT`). The key is `HERALD_VAPID_PRIVATE_KEY`
/// when given, otherwise one generated on first start and kept in the store (the server fills ``vapidPrivateKey`` in
/// before it builds the provider).
///
/// ```swift
/// var configuration = WebPushConfiguration(subject: "mailto:ops@example.com")
/// configuration.vapidPrivateKey = try VAPIDKey.generate()
/// let provider = try WebPushProvider(configuration: configuration)
/// ```
public struct WebPushConfiguration: Sendable, Equatable {
    /// The VAPID `sub` claim: `mailto:` or `https:`; `nil`: the provider is not configured.
    public var subject: String?
    /// The VAPID private key: base64url of the raw 32-byte P-256 scalar, or a PEM (`BEGIN PRIVATE KEY` or `BEGIN EC
    /// PRIVATE KEY`). A secret: never logged.
    public var vapidPrivateKey: String?
    /// Host names, addresses and networks (CIDR) the operator allows beside the known push services; a private address
    /// is reached only when a listed network contains it (``WebPushEgressPolicy``).
    public var allowedHosts: [String]
    /// A PEM file with extra CA certificates to trust besides the system roots (for a local push service).
    public var trustedCAPath: String?
    /// The deadline of one request, from connecting to the complete answer.
    public var requestTimeout: Duration
    /// The deadline of opening a connection (TCP and TLS).
    public var connectTimeout: Duration
    /// The most requests in flight to one push service host; a send beyond them is answered "retry later" at once (it
    /// gives its delivery slot back), so that one slow service cannot hold up another.
    public var maximumPerHost: Int

    public init(
        subject: String? = nil, vapidPrivateKey: String? = nil, allowedHosts: [String] = [], trustedCAPath: String? = nil,
        requestTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5), maximumPerHost: Int = 16
    ) {
        self.subject = subject
        self.vapidPrivateKey = vapidPrivateKey
        self.allowedHosts = allowedHosts
        self.trustedCAPath = trustedCAPath
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.maximumPerHost = maximumPerHost
    }
}

/// A configuration option of the Web Push provider, named as the environment variable that sets it.
public enum WebPushOption: String, ProviderOption {
    case subject = "HERALD_VAPID_SUBJECT"
    case privateKey = "HERALD_VAPID_PRIVATE_KEY"
    case allowedHosts = "HERALD_WEBPUSH_ALLOWED_HOSTS"
    case trustedCAPath = "HERALD_WEBPUSH_CA_PATH"
    case requestTimeout = "HERALD_WEBPUSH_TIMEOUT"
    case maximumPerHost = "HERALD_WEBPUSH_MAX_PER_HOST"
}

/// A Web Push configuration problem in one line that names the option, e.g.
/// `HERALD_VAPID_SUBJECT: "ops" is not a mailto: address or an https: URL`.
public typealias WebPushConfigurationError = ProviderConfigurationError<WebPushOption>

extension WebPushConfiguration: ProviderConfiguration {
    /// `HERALD_WEBPUSH_CA_PATH`.
    public static let trustedCAPathOption = WebPushOption.trustedCAPath
}

extension WebPushConfiguration {
    /// Checks the settings that need no file access (the key, when given, included).
    public func settingProblems() -> [WebPushConfigurationError] {
        var problems: [WebPushConfigurationError] = []
        if let subject, !VAPIDSigner.validSubject(subject) {
            problems.append(.init(.subject, "\"\(subject)\" is not a mailto: address or an https: URL (RFC 8292 §2.1)"))
        }
        if let vapidPrivateKey {
            do { _ = try VAPIDKey.parse(vapidPrivateKey) } catch { problems.append(error) }
        }
        do { _ = try egressPolicy() } catch { problems.append(error) }
        if requestTimeout <= .zero { problems.append(.init(.requestTimeout, "must be positive")) }
        if maximumPerHost < 1 { problems.append(.init(.maximumPerHost, "must be at least 1, got \(maximumPerHost)")) }
        return problems
    }

    /// The registration and send-time rules of ``allowedHosts``.
    ///
    /// - Throws: ``WebPushConfigurationError`` naming `HERALD_WEBPUSH_ALLOWED_HOSTS`.
    public func egressPolicy() throws(WebPushConfigurationError) -> WebPushEgressPolicy {
        do {
            return try WebPushEgressPolicy(allowed: allowedHosts)
        } catch {
            throw WebPushConfigurationError(.allowedHosts, error.description)
        }
    }

    /// `herald webpush check`: validates the configuration offline and describes what the provider would use. Never
    /// prints the private key: only its public key, which is public.
    public func check() throws(WebPushConfigurationError) -> [String] {
        if let problem = settingProblems().first { throw problem }
        let certificates = try loadTrustedCertificates()
        let key = try vapidPrivateKey.map { text throws(WebPushConfigurationError) in try VAPIDKey.parse(text) }
        let policy = try egressPolicy()
        return [
            "subject: \(subject ?? "(not set)")",
            key.map { "VAPID key: \(WebPushOption.privateKey.rawValue), public key \(Base64URL.encode($0.publicKey.x963Representation))" }
                ?? "VAPID key: generated on first start and kept in the database (GET /api/push/webpush/key shows it)",
            "push services: \(WebPushEgressPolicy.knownPushServices.joined(separator: ", "))",
            "allowed hosts: \(policy.hosts.isEmpty ? "none" : policy.hosts.sorted().joined(separator: ", "))",
            "allowed networks: \(policy.networks.isEmpty ? "none" : policy.networks.map { "\($0.address)/\($0.prefixLength)" }.joined(separator: ", "))",
            trustedCAsLine(certificates),
            "request timeout: \(requestTimeout.heraldDescription), connect timeout: \(connectTimeout.heraldDescription)",
            "at most \(maximumPerHost) requests in flight per push service host",
        ]
    }
}

/// The VAPID key pair: parsing the configured private key and generating one.
public enum VAPIDKey {
    /// A new key, as ``WebPushConfiguration/vapidPrivateKey`` keeps it: base64url of the raw 32-byte scalar.
    public static func generate() -> String {
        Base64URL.encode(P256.Signing.PrivateKey().rawRepresentation)
    }

    /// The public key of a private key given as ``parse(_:)`` takes it: base64url of the uncompressed point, as
    /// `applicationServerKey` takes it.
    public static func publicKey(of privateKey: String) throws(WebPushConfigurationError) -> String {
        Base64URL.encode(try parse(privateKey).publicKey.x963Representation)
    }

    /// Parses base64url of the raw 32-byte scalar or a PEM private key.
    ///
    /// - Throws: ``WebPushConfigurationError`` naming `HERALD_VAPID_PRIVATE_KEY`.
    public static func parse(_ text: String) throws(WebPushConfigurationError) -> P256.Signing.PrivateKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN") {
            let pem = trimmed.replacingOccurrences(of: "\\n", with: "\n")
            if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return key }
            throw WebPushConfigurationError(.privateKey, "is not a P-256 private key in PEM")
        }
        guard let raw = Base64URL.decode(trimmed), raw.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) else {
            throw WebPushConfigurationError(
                .privateKey, "must be base64url of a 32-byte P-256 private key (e.g. from py-vapid or web-push) or a PEM private key")
        }
        return key
    }
}
