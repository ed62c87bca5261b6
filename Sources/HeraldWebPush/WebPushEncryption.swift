import Crypto
import Foundation
import HeraldCore

/// Message encryption for Web Push (RFC 8291, with RFC 8188's `aes128gcm` content coding), as one record.
///
/// The push service sees only ciphertext: the browser decrypts with the subscription's private key, which never
/// leaves it. Per message: an ephemeral P-256 key pair and a random 16-byte salt; the shared secret of the ephemeral
/// key and the subscription's `p256dh` key, mixed with the subscription's `auth` secret, gives the content key and
/// nonce (HKDF-SHA-256). The body is the RFC 8188 header (salt, record size 4096, the ephemeral public key) followed
/// by the one encrypted record: plaintext, the last-record delimiter `0x02`, AES-128-GCM.
public enum WebPushEncryption {
    /// The record size every message declares.
    public static let recordSize = 4096
    /// The header: salt (16) ‖ record size (4) ‖ key length (1) ‖ uncompressed P-256 public key (65).
    public static let headerSize = 16 + 4 + 1 + 65
    /// The longest plaintext one record holds: 4096 − the header − the GCM tag (16) − the delimiter (1) = 3,993 bytes.
    public static let maximumPlaintextSize = recordSize - headerSize - 16 - 1

    /// A subscription's keys, as the browser gives them (`PushSubscription.toJSON().keys`, base64url).
    public struct SubscriptionKeys: Sendable, Equatable {
        /// The browser's P-256 public key.
        public let p256dh: P256.KeyAgreement.PublicKey
        /// The 16-byte authentication secret.
        public let auth: Data

        /// - Throws: ``KeyError`` naming the key that is not what the browser gives.
        public init(p256dh: String, auth: String) throws(KeyError) {
            guard let point = Base64URL.decode(p256dh), point.count == 65, point.first == 0x04,
                let key = try? P256.KeyAgreement.PublicKey(x963Representation: point)
            else { throw .p256dh }
            guard let secret = Base64URL.decode(auth), secret.count == 16 else { throw .auth }
            self.p256dh = key
            self.auth = secret
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.auth == rhs.auth && lhs.p256dh.x963Representation == rhs.p256dh.x963Representation
        }
    }

    /// Which of a subscription's keys is malformed.
    public enum KeyError: Error, Sendable, Equatable {
        /// Not the base64url of an uncompressed P-256 point (65 bytes starting with 0x04) on the curve.
        case p256dh
        /// Not the base64url of 16 bytes.
        case auth
    }

    /// The plaintext is longer than one record holds (``maximumPlaintextSize``).
    public struct TooLarge: Error, Sendable, Equatable {
        public var size: Int
        public init(size: Int) { self.size = size }
    }

    /// Encrypts `plaintext` for a subscription: the request body to POST with `Content-Encoding: aes128gcm`.
    ///
    /// - Parameters:
    ///   - ephemeralKey: the sender's one-time key; a new one per message (given only by tests, to reproduce RFC 8291's example).
    ///   - salt: 16 random bytes; a new one per message (given only by tests).
    public static func encrypt(
        _ plaintext: some DataProtocol, for keys: SubscriptionKeys,
        ephemeralKey: P256.KeyAgreement.PrivateKey = .init(), salt: Data? = nil
    ) throws -> Data {
        guard plaintext.count <= maximumPlaintextSize else { throw TooLarge(size: plaintext.count) }
        let salt = salt ?? Data((0..<16).map { _ in UInt8.random(in: .min ... .max) })
        let senderPublic = ephemeralKey.publicKey.x963Representation
        let receiverPublic = keys.p256dh.x963Representation

        // RFC 8291 §3.3-3.4: IKM from the shared secret and the auth secret, then the content key and nonce.
        let shared = try ephemeralKey.sharedSecretFromKeyAgreement(with: keys.p256dh)
        let keyInfo = Data("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let inputKey = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: keys.auth, sharedInfo: keyInfo, outputByteCount: 32)
        let pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: inputKey, salt: salt)
        let contentKey = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: pseudoRandomKey, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)

        // One record: the plaintext and the last-record delimiter, no padding.
        var record = Data(plaintext)
        record.append(0x02)
        let sealed = try AES.GCM.seal(record, using: contentKey, nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))

        var body = Data(capacity: headerSize + record.count + 16)
        body.append(salt)
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body.append(senderPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }
}
