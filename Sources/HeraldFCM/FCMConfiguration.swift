import Foundation
import HeraldCore
import HeraldProviderKit

/// Everything the FCM provider needs to know: the Google service account (which names the Firebase project and the
/// token endpoint) and where FCM is.
///
/// ```swift
/// let configuration = FCMConfiguration(serviceAccount: .file(path: "/etc/herald/firebase-service-account.json"))
/// let provider = try FCMProvider(configuration: configuration)
/// ```
public struct FCMConfiguration: Sendable, Equatable {
    /// Google's FCM endpoint.
    public static let defaultBaseURL = "https://fcm.googleapis.com"

    /// Where the service-account JSON file comes from.
    public var serviceAccount: FCMServiceAccountSource
    /// The base URL of the HTTP v1 API (`{base}/v1/projects/{project_id}/messages:send`).
    public var baseURL: String
    /// A PEM file with extra CA certificates to trust besides the system roots (for a local FCM double); used for
    /// the send endpoint and the token endpoint alike.
    public var trustedCAPath: String?
    /// The deadline of one request (a send or a token exchange), from sending to the complete answer.
    public var requestTimeout: Duration
    /// How many HTTP/2 connections (one `HTTPClient` each) carry the sends, used in turn. Each carries as many
    /// concurrent sends as FCM allows streams (about 100).
    public var connections: Int

    public init(
        serviceAccount: FCMServiceAccountSource, baseURL: String = FCMConfiguration.defaultBaseURL,
        trustedCAPath: String? = nil, requestTimeout: Duration = .seconds(10), connections: Int = 2
    ) {
        self.serviceAccount = serviceAccount
        self.baseURL = baseURL
        self.trustedCAPath = trustedCAPath
        self.requestTimeout = requestTimeout
        self.connections = connections
    }
}

/// Where the service-account JSON is read from.
public enum FCMServiceAccountSource: Sendable, Equatable {
    /// A file on disk (`HERALD_FCM_SERVICE_ACCOUNT`), as downloaded from the Firebase console.
    case file(path: String)
    /// The file's JSON text itself (`HERALD_FCM_SERVICE_ACCOUNT_JSON`), e.g. from a secret store.
    case json(String)
}

/// A configuration option of the FCM provider, named as the environment variable that sets it.
public enum FCMOption: String, ProviderOption {
    case serviceAccountPath = "HERALD_FCM_SERVICE_ACCOUNT"
    case serviceAccountJSON = "HERALD_FCM_SERVICE_ACCOUNT_JSON"
    case baseURL = "HERALD_FCM_BASE_URL"
    case trustedCAPath = "HERALD_FCM_CA_PATH"
    case requestTimeout = "HERALD_FCM_TIMEOUT"
    case connections = "HERALD_FCM_CONNECTIONS"
}

/// An FCM configuration problem in one line that names the option, e.g.
/// `HERALD_FCM_SERVICE_ACCOUNT: /x.json: private_key is not an RSA private key`.
public typealias FCMConfigurationError = ProviderConfigurationError<FCMOption>

extension FCMConfiguration: ProviderConfiguration {
    /// `HERALD_FCM_CA_PATH`; used for the send endpoint and the token endpoint alike.
    public static let trustedCAPathOption = FCMOption.trustedCAPath
}

extension FCMConfiguration {
    /// Reads and checks the service account: a `service_account` with a project id, a client email, an https
    /// token URI and an RSA private key.
    ///
    /// - Throws: ``FCMConfigurationError`` naming `HERALD_FCM_SERVICE_ACCOUNT` (or `…_JSON`).
    public func loadServiceAccount() throws(FCMConfigurationError) -> FCMServiceAccount {
        switch serviceAccount {
        case .file(let path):
            let data = try Self.readFile(path, option: .serviceAccountPath)
            return try FCMServiceAccount(json: data, describedAs: path, option: .serviceAccountPath)
        case .json(let text):
            return try FCMServiceAccount(json: Data(text.utf8), describedAs: "the value", option: .serviceAccountJSON)
        }
    }

    /// Checks the settings that need no file access.
    public func settingProblems() -> [FCMConfigurationError] {
        var problems: [FCMConfigurationError] = []
        if HTTPSBaseURL.normalized(baseURL) == nil {
            problems.append(.init(.baseURL, "\"\(baseURL)\" is not an https:// URL with a host and no path"))
        }
        if requestTimeout <= .zero {
            problems.append(.init(.requestTimeout, "must be positive"))
        }
        if connections < 1 {
            problems.append(.init(.connections, "must be at least 1, got \(connections)"))
        }
        return problems
    }
}
