import Foundation
import HeraldCore
import HeraldProviderKit

extension FCMConfiguration {
    /// `herald fcm check`: validates the configuration offline and describes what the provider would use.
    ///
    /// Reads the service account (project id, client email, token URI, an RSA key of at least 2048 bits) and the extra
    /// CA file, and checks the URL and the timeout. Never prints key material: the key is named by its id and the
    /// SHA-256 of its public key.
    ///
    /// - Returns: one line per setting, e.g. `project: my-project`.
    /// - Throws: the first ``FCMConfigurationError`` found.
    public func check() throws(FCMConfigurationError) -> [String] {
        if let problem = settingProblems().first { throw problem }
        let account = try loadServiceAccount()
        let certificates = try loadTrustedCertificates()
        let source =
            switch serviceAccount {
            case .file(let path): path
            case .json: "inline JSON (\(FCMOption.serviceAccountJSON.rawValue))"
            }
        let base = HTTPSBaseURL.normalized(baseURL) ?? baseURL
        return [
            "service account: \(source)",
            "project: \(account.projectID)",
            "client email: \(account.clientEmail)",
            "key: RS256 RSA \(account.keySizeInBits)-bit private key\(account.privateKeyID.map { " \($0.prefix(8))…" } ?? ""), public key SHA-256 \(account.publicKeyFingerprint)…",
            "token endpoint: \(account.tokenURI)",
            "send endpoint: \(base)/v1/projects/\(account.projectID)/messages:send (HTTP/2)",
            "connections: \(connections) (HTTP/2)",
            trustedCAsLine(certificates),
            "request timeout: \(requestTimeout.components.seconds) s",
            "access token: scope \(FCMAccessTokens.scope), renewed \(Int(FCMAccessTokens.renewalMargin / 60)) min before it expires",
        ]
    }
}
