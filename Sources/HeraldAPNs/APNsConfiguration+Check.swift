import Crypto
import Foundation
import HeraldCore

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
        var trust = "system roots"
        if let path = trustedCAPath {
            trust += " + \(certificates.count) certificate\(certificates.count == 1 ? "" : "s") from \(path)"
        }
        return [
            "key: \(keySource) (ES256 P-256 private key, public key SHA-256 \(fingerprint)…)",
            "key id: \(keyID)",
            "team id: \(teamID)",
            "topic: \(topic)",
            "production endpoint: \(HTTPSBaseURL.normalized(productionURL) ?? productionURL)",
            "sandbox endpoint: \(HTTPSBaseURL.normalized(sandboxURL) ?? sandboxURL)",
            "trusted CAs: \(trust)",
            "connections per environment: \(connectionsPerEnvironment) (HTTP/2)",
            "request timeout: \(requestTimeout.heraldDescription)",
            "provider token: ES256, renewed every \(refresh)",
        ]
    }
}

extension Duration {
    /// A short human form: `10 s`, `250 ms`, `50 min`.
    var heraldDescription: String {
        let milliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        if milliseconds % 60_000 == 0, milliseconds >= 60_000 { return "\(milliseconds / 60_000) min" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000) s" }
        return "\(milliseconds) ms"
    }
}
