import Foundation
import HeraldCore
import NIOSSL

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
public enum FCMOption: String, Sendable, CaseIterable {
    case serviceAccountPath = "HERALD_FCM_SERVICE_ACCOUNT"
    case serviceAccountJSON = "HERALD_FCM_SERVICE_ACCOUNT_JSON"
    case baseURL = "HERALD_FCM_BASE_URL"
    case trustedCAPath = "HERALD_FCM_CA_PATH"
    case requestTimeout = "HERALD_FCM_TIMEOUT"
    case connections = "HERALD_FCM_CONNECTIONS"
}

/// A configuration problem in one line that names the option, e.g.
/// `HERALD_FCM_SERVICE_ACCOUNT: /x.json: private_key is not an RSA private key`.
public struct FCMConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The option at fault.
    public let option: FCMOption
    /// What is wrong, without the option's name.
    public let problem: String

    public init(_ option: FCMOption, _ problem: String) {
        self.option = option
        self.problem = problem
    }

    /// `<OPTION>: <problem>`, one line for an operator.
    public var description: String { "\(option.rawValue): \(problem)" }
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

    /// Reads the extra CA certificates of ``trustedCAPath``; empty when none is configured.
    ///
    /// - Throws: ``FCMConfigurationError`` naming `HERALD_FCM_CA_PATH`.
    public func loadTrustedCertificates() throws(FCMConfigurationError) -> [NIOSSLCertificate] {
        guard let path = trustedCAPath else { return [] }
        let data = try Self.readFile(path, option: .trustedCAPath)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(data))
        } catch {
            throw FCMConfigurationError(.trustedCAPath, "\(path) is not a PEM file of CA certificates")
        }
        guard !certificates.isEmpty else { throw FCMConfigurationError(.trustedCAPath, "\(path) holds no PEM certificate") }
        return certificates
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

    static func readFile(_ path: String, option: FCMOption) throws(FCMConfigurationError) -> Data {
        do {
            return try ConfigurationFile.read(path)
        } catch {
            throw FCMConfigurationError(option, error.description)
        }
    }
}
