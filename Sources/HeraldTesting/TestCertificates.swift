import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A throwaway certificate authority and a server certificate it signed, made at runtime.
///
/// The leaf is valid for `localhost` and `127.0.0.1`, so a TLS client that trusts ``caCertificatePEM``
/// can reach a local server at either name.
///
/// ```swift
/// let certificates = try TestCertificates.make()
/// let caPath = try certificates.writeCA()       // point the gateway's trusted-CA option here
/// ```
public struct TestCertificates: Sendable {
    /// The CA certificate (PEM) to trust.
    public let caCertificatePEM: String
    /// The server certificate (PEM), signed by the CA.
    public let leafCertificatePEM: String
    /// The server's private key (PKCS#8 PEM).
    public let leafPrivateKeyPEM: String

    /// One CA and leaf for the whole test process (valid for a week from its first use): what the doubles present
    /// unless given others. Sharing them lets every provider that trusts this CA share one TLS context, which a
    /// provider would otherwise build for itself, parsing the system's CA bundle each time (most of the CPU a test run
    /// spent in its first seconds, when every test starts at once).
    public static let shared: TestCertificates = {
        do { return try make() } catch { fatalError("cannot make the shared test certificates: \(error)") }
    }()

    /// Creates a CA and a leaf for `localhost`/`127.0.0.1` (and `extraNames`), valid from an hour ago for `validity`.
    public static func make(validity: TimeInterval = 7 * 86_400, extraNames: [String] = []) throws -> TestCertificates {
        let now = Date()
        let notBefore = now.addingTimeInterval(-3_600)
        let notAfter = now.addingTimeInterval(validity)

        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Herald Tests")
            CommonName("Herald Test CA")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(leafKey.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName,
            subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(
                    [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))] + extraNames.map { .dnsName($0) })
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        return TestCertificates(
            caCertificatePEM: try ca.serializeAsPEM().pemString,
            leafCertificatePEM: try leaf.serializeAsPEM().pemString,
            leafPrivateKeyPEM: leafKey.pemRepresentation)
    }

    /// Writes the CA certificate to `herald-test-ca.pem` in `directory` (default: a new temporary directory).
    ///
    /// - Returns: the file's path.
    public func writeCA(in directory: URL? = nil) throws -> String {
        let directory = try directory ?? TemporaryDirectory.make()
        let url = directory.appendingPathComponent("herald-test-ca.pem")
        try Data(caCertificatePEM.utf8).write(to: url)
        return url.path
    }

    /// A client TLS configuration that trusts only the test CA.
    public func clientTLSConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caCertificatePEM.utf8)))
        return configuration
    }

    /// A server TLS configuration presenting the leaf certificate, offering only `applicationProtocols` in ALPN.
    public func serverTLSConfiguration(applicationProtocols: [String] = ["h2"]) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(leafCertificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafPrivateKeyPEM.utf8), format: .pem)))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = applicationProtocols
        return configuration
    }
}
