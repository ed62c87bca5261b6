import Foundation
import HeraldProviderKit

/// Everything the APNs provider needs to know: the signing key, the team, the app and the endpoints.
///
/// A plain value that the server builds from its configuration file or environment and that tests
/// build directly:
///
/// ```swift
/// var configuration = APNsConfiguration(
///     key: .file(path: "/etc/herald/AuthKey_ABC123DEFG.p8"),
///     keyID: "ABC123DEFG", teamID: "DEF123GHIJ", topic: "com.example.app"
/// )
/// configuration.connectionsPerEnvironment = 4
/// let provider = try APNsProvider(configuration: configuration)
/// ```
public struct APNsConfiguration: Sendable, Equatable {
    /// Apple's production endpoint.
    public static let defaultProductionURL = "https://api.push.apple.com"
    /// Apple's development (sandbox) endpoint.
    public static let defaultSandboxURL = "https://api.sandbox.push.apple.com"

    /// Where the `.p8` signing key (a PKCS#8 PEM holding a P-256 private key) comes from.
    public var key: APNsKeySource
    /// The 10-character Key ID of the signing key (the JWT header's `kid`).
    public var keyID: String
    /// The 10-character Team ID of the developer account (the JWT claim `iss`).
    public var teamID: String
    /// The app's bundle identifier, sent as `apns-topic`.
    public var topic: String
    /// The base URL for devices in the production environment.
    public var productionURL: String
    /// The base URL for devices in the sandbox environment.
    public var sandboxURL: String
    /// A PEM file with extra CA certificates to trust besides the system roots (for a local APNs double).
    public var trustedCAPath: String?
    /// How many HTTP/2 connections (``APNsConnection``s) to keep per environment, used in turn.
    public var connectionsPerEnvironment: Int
    /// The deadline of one request, from sending to the complete answer.
    public var requestTimeout: Duration
    /// How old a provider token may get before a new one is minted.
    /// Values below 20 minutes are raised to 20 minutes (Apple's minimum refresh interval).
    public var tokenRefreshInterval: Duration

    /// Creates a configuration with Apple's endpoints and the default pool size, timeout and token lifetime.
    public init(
        key: APNsKeySource, keyID: String, teamID: String, topic: String,
        productionURL: String = APNsConfiguration.defaultProductionURL,
        sandboxURL: String = APNsConfiguration.defaultSandboxURL,
        trustedCAPath: String? = nil,
        connectionsPerEnvironment: Int = 2,
        requestTimeout: Duration = .seconds(10),
        tokenRefreshInterval: Duration = ProviderTokenIssuer.defaultRefreshInterval
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.trustedCAPath = trustedCAPath
        self.connectionsPerEnvironment = connectionsPerEnvironment
        self.requestTimeout = requestTimeout
        self.tokenRefreshInterval = tokenRefreshInterval
    }
}

/// Where the APNs signing key is read from.
public enum APNsKeySource: Sendable, Equatable {
    /// A `.p8` file on disk (`HERALD_APNS_KEY_PATH`).
    case file(path: String)
    /// The PEM text itself (`HERALD_APNS_KEY`), e.g. from a secret store.
    case pem(String)
}

/// A configuration option of the APNs provider, named as the environment variable that sets it.
public enum APNsOption: String, ProviderOption {
    case keyPath = "HERALD_APNS_KEY_PATH"
    case key = "HERALD_APNS_KEY"
    case keyID = "HERALD_APNS_KEY_ID"
    case teamID = "HERALD_APNS_TEAM_ID"
    case topic = "HERALD_APNS_TOPIC"
    case productionURL = "HERALD_APNS_PRODUCTION_URL"
    case sandboxURL = "HERALD_APNS_SANDBOX_URL"
    case trustedCAPath = "HERALD_APNS_CA_PATH"
    case connectionsPerEnvironment = "HERALD_APNS_CONNECTIONS"
    case requestTimeout = "HERALD_APNS_TIMEOUT"
    case tokenRefreshInterval = "HERALD_APNS_TOKEN_REFRESH"
}

/// An APNs configuration problem, described in one line that names the option, e.g.
/// `HERALD_APNS_KEY_PATH: cannot read /x.p8: No such file`.
public typealias APNsConfigurationError = ProviderConfigurationError<APNsOption>

extension APNsConfiguration: ProviderConfiguration {
    /// `HERALD_APNS_CA_PATH`.
    public static let trustedCAPathOption = APNsOption.trustedCAPath
}
