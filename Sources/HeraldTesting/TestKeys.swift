import Crypto
import Foundation

/// A fresh APNs signing key with its Key ID and Team ID, as Apple would hand them out.
///
/// ```swift
/// let key = TestKey()
/// let path = try key.writeP8()   // a PKCS#8 PEM "AuthKey_<kid>.p8" in a new temporary directory
/// let double = try await APNsDouble.start(keys: [.init(key)], topics: ["com.example.app"])
/// ```
public struct TestKey: Sendable {
    /// The P-256 private key.
    public let privateKey: P256.Signing.PrivateKey
    /// The 10-character Key ID.
    public let keyID: String
    /// The 10-character Team ID.
    public let teamID: String

    /// Mints a new key; ids default to random 10-character identifiers.
    public init(keyID: String = TestKeys.randomIdentifier(), teamID: String = TestKeys.randomIdentifier()) {
        self.privateKey = P256.Signing.PrivateKey()
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The public key APNs would verify tokens with.
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// The key as a `.p8` file's content: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public var p8PEM: String { privateKey.pemRepresentation }

    /// Writes the key as `AuthKey_<keyID>.p8` into `directory` (default: a new temporary directory).
    ///
    /// - Returns: the file's path.
    public func writeP8(in directory: URL? = nil) throws -> String {
        let directory = try directory ?? TemporaryDirectory.make()
        let url = directory.appendingPathComponent("AuthKey_\(keyID).p8")
        try Data(p8PEM.utf8).write(to: url)
        return url.path
    }
}

/// Helpers for keys and ids that tests need.
public enum TestKeys {
    /// A random identifier shaped like Apple's Key and Team IDs: 10 uppercase letters and digits.
    public static func randomIdentifier() -> String {
        random(10, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    }

    /// `count` characters drawn at random from `alphabet`.
    static func random(_ count: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in characters[Int.random(in: 0..<characters.count, using: &generator)] })
    }

    /// Writes `text` to a new file `name` in a new temporary directory (e.g. a broken key), returning the path.
    public static func writeFile(named name: String, containing text: String) throws -> String {
        let url = try TemporaryDirectory.make().appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// A P-384 private key as PKCS#8 PEM: a valid `.p8`-looking key on the wrong curve for APNs.
    public static func p384PEM() -> String {
        P384.Signing.PrivateKey().pemRepresentation
    }
}
