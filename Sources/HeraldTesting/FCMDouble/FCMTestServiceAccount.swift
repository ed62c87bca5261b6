import Foundation
import HeraldCore
import _CryptoExtras

/// A Google service account as the JSON key file from the Firebase or Cloud console describes it: an RSA key,
/// its `private_key_id`, the account's `client_email` and `client_id`, and the project.
///
/// ```swift
/// let account = FCMTestServiceAccount(projectID: "herald-test")
/// let double = try await FCMDouble.start(serviceAccount: account)
/// let path = try double.writeServiceAccount()   // the file the gateway is configured with
/// ```
///
/// An account made without a key has ``TestRSAKeys/first``: generating a 2048-bit key takes from 0.1 s to about a
/// second, which tests should not spend.
public struct FCMTestServiceAccount: Sendable {
    /// The `project_id` of the file.
    public let projectID: String
    /// The `client_email`: the `iss` of the account's assertions.
    public let clientEmail: String
    /// The `private_key_id` (40 hex digits): the `kid` a client may put in its assertions' header.
    public let privateKeyID: String
    /// The `client_id` (21 digits).
    public let clientID: String
    /// The RSA key that signs the account's assertions (RS256).
    public let privateKey: _RSA.Signing.PrivateKey

    /// Mints an account with the fixed test key (``TestRSAKeys/first``), a random key id and client id, and by default
    /// a `client_email` shaped like the Admin SDK's (`firebase-adminsdk-xxxxx@<project>.iam.gserviceaccount.com`).
    public init(projectID: String = "herald-test", clientEmail: String? = nil) {
        self.init(privateKey: TestRSAKeys.first, projectID: projectID, clientEmail: clientEmail)
    }

    /// An account with a given key.
    public init(
        privateKey: _RSA.Signing.PrivateKey, projectID: String = "herald-test", clientEmail: String? = nil,
        privateKeyID: String? = nil
    ) {
        self.privateKey = privateKey
        self.projectID = projectID
        self.clientEmail =
            clientEmail ?? "firebase-adminsdk-\(TestKeys.random(5, from: "abcdefghijklmnopqrstuvwxyz0123456789"))"
            + "@\(projectID).iam.gserviceaccount.com"
        self.privateKeyID = privateKeyID ?? TestKeys.random(40, from: "0123456789abcdef")
        self.clientID = TestKeys.random(1, from: "123456789") + TestKeys.random(20, from: "0123456789")
    }

    /// The public half, which verifies the account's assertions.
    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    /// The key as the file's `private_key` holds it: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), ending in a newline.
    public var privateKeyPEM: String {
        let pem = privateKey.pkcs8PEMRepresentation
        return pem.hasSuffix("\n") ? pem : pem + "\n"
    }

    /// The service-account JSON file's text, with `token_uri` set to `tokenURI` (Google's is
    /// `https://oauth2.googleapis.com/token`) and every other field a console-made file has.
    public func json(tokenURI: String) -> String {
        let file: JSONObject = [
            "type": "service_account",
            "project_id": .string(projectID),
            "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKeyPEM),
            "client_email": .string(clientEmail),
            "client_id": .string(clientID),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(tokenURI),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": .string(
                "https://www.googleapis.com/robot/v1/metadata/x509/"
                    + (clientEmail.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", ".", "_"]))
                        ?? clientEmail)),
            "universe_domain": "googleapis.com",
        ]
        // Encoding a JSONValue of strings cannot fail.
        return String(decoding: (try? JSONValue.object(file).encoded()) ?? Data(), as: UTF8.self)
    }

    /// A correct assertion for the token endpoint at `tokenURI`, as Google's client libraries make it: header
    /// `{"alg":"RS256","typ":"JWT","kid":<private_key_id>}`, claims `iss` (the client email), `scope`, `aud`
    /// (`tokenURI`), `iat` and `exp` = `iat` + `lifetime`.
    public func assertion(
        tokenURI: String, scope: String = FCMDouble.messagingScope, issuedAt: Date = Date(), lifetime: TimeInterval = 3_600
    ) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        return try signedJWT(
            header: ["alg": "RS256", "typ": "JWT", "kid": .string(privateKeyID)],
            claims: [
                "iss": .string(clientEmail), "scope": .string(scope), "aud": .string(tokenURI), "iat": .int(iat),
                "exp": .int(iat + Int(lifetime)),
            ])
    }

    /// `header` and `claims` as given, signed RS256 (RSASSA-PKCS1-v1_5 with SHA-256) with the account's key: for
    /// assertions with chosen faults.
    public func signedJWT(header: JSONObject, claims: JSONObject) throws -> String {
        let input =
            Base64URL.encode(try JSONValue.object(header).encoded()) + "."
            + Base64URL.encode(try JSONValue.object(claims).encoded())
        let signature = try privateKey.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
