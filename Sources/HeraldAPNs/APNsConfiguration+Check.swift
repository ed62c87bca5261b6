import Crypto
import Foundation
import HeraldCore
import HeraldProviderKit

extension APNsConfiguration {
    /// `herald apns check`: validates the configuration offline and describes what the provider would use.
    ///
    /// Loads the key and the extra CA file, checks the key and team ids (10 characters), the topic, the URLs,
    /// the pool size and the timeouts. Never prints key material: the key is identified by its path and the
    /// SHA-256 of its public key.
    ///
    /// ```swift
    /// for line in try configuration.check() { print(line) }
    /// ```
    ///
    /// - Returns: one line per setting, e.g. `team id: DEF123GHIJ`.
    /// - Throws: the first ``APNsConfigurationError`` found.
    public func check() throws(APNsConfigurationError) -> [String] {
        if let problem = settingProblems().first { throw problem }
        let signingKey = try loadSigningKey()
        let certificates = try loadTrustedCertificates()

        let keySource =
            switch key {
            case .file(let path): path
            case .pem: "inline PEM (\(APNsOption.key.rawValue))"
            }
        let fingerprint = SHA256.hash(data: signingKey.publicKey.derRepresentation)
            .prefix(8).map { String(format: "%02x", $0) }.joined()
        let refresh = ProviderTokenIssuer.effectiveRefreshInterval(tokenRefreshInterval).heraldDescription
        return [
            "key: \(keySource) (ES256 P-256 private key, public key SHA-256 \(fingerprint)…)",
            "key id: \(keyID)",
            "team id: \(teamID)",
            "topic: \(topic)",
            "production endpoint: \(HTTPSBaseURL.normalized(productionURL) ?? productionURL)",
            "sandbox endpoint: \(HTTPSBaseURL.normalized(sandboxURL) ?? sandboxURL)",
            trustedCAsLine(certificates),
            "connections per environment: \(connectionsPerEnvironment) (HTTP/2)",
            "request timeout: \(requestTimeout.heraldDescription)",
            "provider token: ES256, renewed every \(refresh)",
        ]
    }
}
