import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldWebPush

/// How Herald reaches callback receivers (docs/operations.md, "Egress"): `https` only, public addresses only unless
/// ``allowedNetworks`` lists others, extra trusted CAs, deadlines, and a cap of requests in flight per host so that one
/// slow receiver cannot hold up the rest.
public struct CallbackConfiguration: Sendable, Equatable {
    /// Networks (CIDR) or addresses a callback may reach although they are private (`HERALD_CALLBACK_ALLOWED_NETWORKS`).
    public var allowedNetworks: [String]
    /// A PEM file with extra CA certificates to trust besides the system roots (`HERALD_CALLBACK_CA_PATH`).
    public var trustedCAPath: String?
    /// The deadline of one attempt, from connecting to the complete answer (`HERALD_CALLBACK_TIMEOUT`).
    public var requestTimeout: Duration
    /// The deadline of opening a connection (TCP and TLS).
    public var connectTimeout: Duration
    /// The most attempts in flight to one host (`HERALD_CALLBACK_MAX_PER_HOST`); a callback beyond them waits a second
    /// (not counted as an attempt).
    public var maximumPerHost: Int
    /// The most attempts in flight in all.
    public var maximumInFlight: Int
    /// How often due callbacks are looked for (not an option: tests shorten it).
    public var pollInterval: Duration
    /// How long finished callbacks are kept.
    public var finishedRetention: TimeInterval

    public init(
        allowedNetworks: [String] = [], trustedCAPath: String? = nil, requestTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(5), maximumPerHost: Int = 4, maximumInFlight: Int = 64, pollInterval: Duration = .seconds(1),
        finishedRetention: TimeInterval = 7 * 86_400
    ) {
        self.allowedNetworks = allowedNetworks
        self.trustedCAPath = trustedCAPath
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.maximumPerHost = maximumPerHost
        self.maximumInFlight = maximumInFlight
        self.pollInterval = pollInterval
        self.finishedRetention = finishedRetention
    }
}

/// A callback option, named as the environment variable that sets it.
public enum CallbackOption: String, ProviderOption {
    case allowedNetworks = "HERALD_CALLBACK_ALLOWED_NETWORKS"
    case trustedCAPath = "HERALD_CALLBACK_CA_PATH"
    case requestTimeout = "HERALD_CALLBACK_TIMEOUT"
    case maximumPerHost = "HERALD_CALLBACK_MAX_PER_HOST"
}

/// A callback configuration problem in one line that names the option.
public typealias CallbackConfigurationError = ProviderConfigurationError<CallbackOption>

extension CallbackConfiguration: ProviderConfiguration {
    /// `HERALD_CALLBACK_CA_PATH`.
    public static let trustedCAPathOption = CallbackOption.trustedCAPath
}

extension CallbackConfiguration {
    /// The addresses callbacks may reach: public ones, and those in ``allowedNetworks``. Host names are not entries
    /// here (a name is resolved at each attempt and its addresses vetted).
    ///
    /// - Throws: ``CallbackConfigurationError`` naming `HERALD_CALLBACK_ALLOWED_NETWORKS` for an entry that is not an
    ///   address or a network.
    public func egressPolicy() throws(CallbackConfigurationError) -> WebPushEgressPolicy {
        for entry in allowedNetworks where IPNetworkBytes(entry.trimmingCharacters(in: .whitespaces)) == nil {
            throw CallbackConfigurationError(.allowedNetworks, "\"\(entry)\" is not an IP address or a network (CIDR, e.g. 10.0.0.0/8)")
        }
        do {
            return try WebPushEgressPolicy(allowed: allowedNetworks)
        } catch {
            throw CallbackConfigurationError(.allowedNetworks, error.description)
        }
    }

    /// Checks the settings that need no file access.
    public func settingProblems() -> [CallbackConfigurationError] {
        var problems: [CallbackConfigurationError] = []
        do { _ = try egressPolicy() } catch { problems.append(error) }
        if requestTimeout <= .zero { problems.append(.init(.requestTimeout, "must be positive")) }
        if maximumPerHost < 1 { problems.append(.init(.maximumPerHost, "must be at least 1, got \(maximumPerHost)")) }
        return problems
    }
}
