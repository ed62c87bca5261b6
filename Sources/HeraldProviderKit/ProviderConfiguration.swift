import Foundation
import HeraldCore
import NIOSSL

/// A configuration option of a provider, named as the environment variable that sets it (`HERALD_APNS_KEY_PATH`).
public protocol ProviderOption: RawRepresentable<String>, Hashable, Sendable, CaseIterable {}

/// A provider's configuration problem, rendered in one line by `herald serve` and `herald <provider> check`.
public protocol ProviderConfigurationFailure: Error, CustomStringConvertible {}

/// A configuration problem described in one line that names the option, e.g.
/// `HERALD_APNS_KEY_PATH: cannot read /x.p8: No such file`.
///
/// Errors name the option so an operator knows what to fix; a server that reads the options under other names can
/// render ``problem`` with its own name. Each provider module names its own: `APNsConfigurationError` is
/// `ProviderConfigurationError<APNsOption>`.
public struct ProviderConfigurationError<Option: ProviderOption>: ProviderConfigurationFailure, Sendable, Equatable {
    /// The option at fault.
    public let option: Option
    /// What is wrong, without the option's name.
    public let problem: String

    /// Creates an error for an option.
    public init(_ option: Option, _ problem: String) {
        self.option = option
        self.problem = problem
    }

    /// `<OPTION>: <problem>`, one line for an operator.
    public var description: String { "\(option.rawValue): \(problem)" }
}

/// What every provider's configuration shares: files named by options, and extra CA certificates to trust besides
/// the system's (for a local double).
public protocol ProviderConfiguration: Sendable {
    /// The provider's options.
    associatedtype Option: ProviderOption
    /// The option that names the extra CA file (`HERALD_APNS_CA_PATH`).
    static var trustedCAPathOption: Option { get }
    /// A PEM file with extra CA certificates to trust besides the system roots.
    var trustedCAPath: String? { get }
}

extension ProviderConfiguration {
    /// Reads the extra CA certificates of ``trustedCAPath``; empty when none is configured.
    ///
    /// - Throws: ``ProviderConfigurationError`` naming ``trustedCAPathOption``, e.g.
    ///   `HERALD_APNS_CA_PATH: /x.pem holds no PEM certificate`.
    public func loadTrustedCertificates() throws(ProviderConfigurationError<Option>) -> [NIOSSLCertificate] {
        guard let path = trustedCAPath else { return [] }
        let data = try Self.readFile(path, option: Self.trustedCAPathOption)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(data))
        } catch {
            throw ProviderConfigurationError(Self.trustedCAPathOption, "\(path) is not a PEM file of CA certificates")
        }
        guard !certificates.isEmpty else {
            throw ProviderConfigurationError(Self.trustedCAPathOption, "\(path) holds no PEM certificate")
        }
        return certificates
    }

    /// The file an option names, or the reason it cannot be read in an operator's words.
    ///
    /// - Throws: ``ProviderConfigurationError`` naming `option`, e.g. `HERALD_APNS_KEY_PATH: cannot read /x.p8: No such
    ///   file`.
    public static func readFile(_ path: String, option: Option) throws(ProviderConfigurationError<Option>) -> Data {
        do {
            return try ConfigurationFile.read(path)
        } catch {
            throw ProviderConfigurationError(option, error.description)
        }
    }

    /// `herald <provider> check`'s line for the trusted CAs: `trusted CAs: system roots + 2 certificates from /x.pem`.
    public func trustedCAsLine(_ certificates: [NIOSSLCertificate]) -> String {
        var trust = "system roots"
        if let path = trustedCAPath {
            trust += " + \(certificates.count) certificate\(certificates.count == 1 ? "" : "s") from \(path)"
        }
        return "trusted CAs: \(trust)"
    }
}

extension Duration {
    /// A short human form for operators: `10 s`, `250 ms`, `50 min`.
    public var heraldDescription: String {
        let milliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        if milliseconds % 60_000 == 0, milliseconds >= 60_000 { return "\(milliseconds / 60_000) min" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000) s" }
        return "\(milliseconds) ms"
    }
}
