import Crypto
import Foundation
import HeraldCore
import HeraldProviderKit

extension APNsConfiguration {
    /// Reads and parses the `.p8` signing key.
    ///
    /// - Throws: ``APNsConfigurationError`` naming `HERALD_APNS_KEY_PATH` (or `HERALD_APNS_KEY`), e.g.
    ///   `HERALD_APNS_KEY_PATH: cannot read /x.p8: No such file` or
    ///   `HERALD_APNS_KEY_PATH: /x.p8 is not an ES256 (P-256) private key`.
    public func loadSigningKey() throws(APNsConfigurationError) -> P256.Signing.PrivateKey {
        switch key {
        case .file(let path):
            let data = try Self.readFile(path, option: .keyPath)
            guard let text = String(data: data, encoding: .utf8) else {
                throw APNsConfigurationError(.keyPath, "\(path) is not an ES256 (P-256) private key")
            }
            return try Self.parseKey(text, describedAs: path, option: .keyPath)
        case .pem(let text):
            return try Self.parseKey(text, describedAs: "the value", option: .key)
        }
    }

    /// Checks the settings that need no file access: key and team ids, topic, URLs, pool size, timeouts.
    ///
    /// - Returns: every problem found, in option order; empty when the settings are usable.
    public func settingProblems() -> [APNsConfigurationError] {
        var problems: [APNsConfigurationError] = []
        if !Self.isAppleIdentifier(keyID) {
            problems.append(.init(.keyID, "must be the 10-character Key ID of the .p8 key, got \"\(keyID)\""))
        }
        if !Self.isAppleIdentifier(teamID) {
            problems.append(.init(.teamID, "must be the 10-character Team ID of the developer account, got \"\(teamID)\""))
        }
        if topic.isEmpty || topic.contains(where: \.isWhitespace) {
            problems.append(.init(.topic, "must be the app's bundle identifier, got \"\(topic)\""))
        }
        for (option, url) in [(APNsOption.productionURL, productionURL), (.sandboxURL, sandboxURL)]
        where HTTPSBaseURL.normalized(url) == nil {
            problems.append(.init(option, "\"\(url)\" is not an https:// URL with a host and no path"))
        }
        if connectionsPerEnvironment < 1 {
            problems.append(.init(.connectionsPerEnvironment, "must be at least 1, got \(connectionsPerEnvironment)"))
        }
        if requestTimeout <= .zero {
            problems.append(.init(.requestTimeout, "must be positive, got \(requestTimeout.heraldDescription)"))
        }
        if tokenRefreshInterval >= .seconds(3_600) {
            problems.append(
                .init(
                    .tokenRefreshInterval,
                    "must be under 60 minutes (APNs rejects older tokens), got \(tokenRefreshInterval.heraldDescription)"))
        }
        return problems
    }

    /// Apple's Key IDs and Team IDs are 10 ASCII letters or digits.
    static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10
            && value.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
    }

    private static func parseKey(
        _ text: String, describedAs source: String, option: APNsOption
    ) throws(APNsConfigurationError) -> P256.Signing.PrivateKey {
        let pem = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !pem.isEmpty else { throw APNsConfigurationError(option, "\(source) is empty") }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw APNsConfigurationError(option, "\(source) is not an ES256 (P-256) private key")
        }
    }
}
