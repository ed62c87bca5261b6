import Crypto
import Foundation
import HeraldProviderKit
import _CryptoExtras

/// A Google service account, as the JSON file the Firebase console hands out holds it
/// (Project settings → Service accounts → Generate new private key).
///
/// Herald reads `project_id`, `client_email`, `private_key_id`, `private_key` (a PEM RSA key) and `token_uri`;
/// the other members are ignored.
public struct FCMServiceAccount: Sendable {
    /// The Firebase project that messages are sent in (`/v1/projects/{project_id}/messages:send`).
    public let projectID: String
    /// The account's email: the `iss` of the OAuth assertion.
    public let clientEmail: String
    /// The key's id: the `kid` of the assertion's header, when the file has one.
    public let privateKeyID: String?
    /// Where the assertion is exchanged for an access token: its `aud`.
    public let tokenURI: String
    /// The RS256 signing key. A secret: never logged.
    let privateKey: _RSA.Signing.PrivateKey

    /// The public key's SHA-256, shortened: names the key in `herald fcm check` without showing it.
    public var publicKeyFingerprint: String {
        SHA256.hash(data: privateKey.publicKey.derRepresentation).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The key's size in bits.
    public var keySizeInBits: Int { privateKey.keySizeInBits }

    private struct File: Decodable {
        var type: String?
        var project_id: String?
        var private_key_id: String?
        var private_key: String?
        var client_email: String?
        var token_uri: String?
    }

    /// Parses and checks a service-account file's JSON.
    ///
    /// - Throws: ``FCMConfigurationError`` for `option`, naming the member at fault.
    init(json: Data, describedAs source: String, option: FCMOption) throws(FCMConfigurationError) {
        func problem(_ text: String) -> FCMConfigurationError { FCMConfigurationError(option, "\(source): \(text)") }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: json)
        } catch {
            throw problem("is not a service-account JSON file (expected an object with project_id, client_email, private_key and token_uri)")
        }
        if let type = file.type, type != "service_account" {
            throw problem("type is \"\(type)\", expected \"service_account\"")
        }
        func required(_ value: String?, _ name: String) throws(FCMConfigurationError) -> String {
            guard let value, !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw problem("\(name) is missing")
            }
            return value
        }
        projectID = try required(file.project_id, "project_id")
        clientEmail = try required(file.client_email, "client_email")
        tokenURI = try required(file.token_uri, "token_uri")
        privateKeyID = file.private_key_id.flatMap { $0.isEmpty ? nil : $0 }
        let pem = try required(file.private_key, "private_key").trimmingCharacters(in: .whitespacesAndNewlines)
        guard projectID.utf8.allSatisfy(Self.isProjectIDCharacter) else {
            throw problem("project_id \"\(projectID)\" is not a Firebase project id")
        }
        guard let url = URL(string: tokenURI), url.scheme?.lowercased() == "https", url.host?.isEmpty == false else {
            throw problem("token_uri \"\(tokenURI)\" is not an https:// URL")
        }
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw problem("private_key is not an RSA private key of at least 2048 bits in PEM")
        }
    }

    /// Google Cloud project ids: lowercase letters, digits and hyphens (`example.com:name` for domain-scoped ones).
    private static func isProjectIDCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "."), UInt8(ascii: ":"):
            true
        default: false
        }
    }
}
