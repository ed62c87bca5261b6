import Crypto
import Foundation
import HeraldCore

/// The browser's side of RFC 8291: decrypts an `aes128gcm` Web Push body with the subscription's private key and
/// auth secret, as a push service's client would. Written from the RFCs for the test double; the interoperability
/// test checks Herald's output against PyPI's `http-ece` as well.
public enum WebPushDecryption {
    public enum Failure: Error, Equatable {
        case shortBody
        case recordSize(Int)
        case keyLength(Int)
        case badKey
        case authentication
        case noDelimiter
    }

    /// A browser's subscription keys: the private key and the auth secret, and what `toJSON()` would give.
    public struct Subscriber: Sendable {
        public let privateKey: P256.KeyAgreement.PrivateKey
        public let auth: Data

        public init(privateKey: P256.KeyAgreement.PrivateKey = .init(), auth: Data = Data((0..<16).map { _ in UInt8.random(in: 0...255) })) {
            self.privateKey = privateKey
            self.auth = auth
        }

        /// `keys.p256dh`: base64url of the uncompressed public key.
        public var p256dh: String { Base64URL.encode(privateKey.publicKey.x963Representation) }
        /// `keys.auth`: base64url of the 16-byte secret.
        public var authText: String { Base64URL.encode(auth) }
    }

    /// The plaintext of `body`, and the record size and sender key its header declared.
    public static func decrypt(_ body: Data, for subscriber: Subscriber) throws(Failure) -> (plaintext: Data, recordSize: Int, senderKey: Data) {
        let bytes = [UInt8](body)
        guard bytes.count > 21 else { throw .shortBody }
        let salt = Data(bytes[0..<16])
        let recordSize = Int(bytes[16]) << 24 | Int(bytes[17]) << 16 | Int(bytes[18]) << 8 | Int(bytes[19])
        guard recordSize >= 18 else { throw .recordSize(recordSize) }
        let keyLength = Int(bytes[20])
        guard keyLength == 65, bytes.count >= 21 + keyLength + 16 else { throw .keyLength(keyLength) }
        let senderKey = Data(bytes[21..<(21 + keyLength)])
        let record = Data(bytes[(21 + keyLength)...])
        guard let senderPublic = try? P256.KeyAgreement.PublicKey(x963Representation: senderKey),
            let shared = try? subscriber.privateKey.sharedSecretFromKeyAgreement(with: senderPublic)
        else { throw .badKey }
        let info = Data("WebPush: info".utf8) + [0] + subscriber.privateKey.publicKey.x963Representation + senderKey
        let inputKey = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: subscriber.auth, sharedInfo: info, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: inputKey, salt: salt)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        guard record.count >= 16, let nonceValue = try? AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }),
            let box = try? AES.GCM.SealedBox(nonce: nonceValue, ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let padded = try? AES.GCM.open(box, using: key)
        else { throw .authentication }
        // The last record ends with 0x02 followed by zero padding.
        guard let delimiter = padded.lastIndex(where: { $0 != 0 }), padded[delimiter] == 0x02 else { throw .noDelimiter }
        return (Data(padded[padded.startIndex..<delimiter]), recordSize, senderKey)
    }
}
