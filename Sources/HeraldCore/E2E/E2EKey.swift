import Crypto
import Foundation

/// A `pw1` key: 32 bytes, written as 64 hex characters (docs/e2e.md). It seals and opens ``E2EEnvelope``s.
///
/// ```swift
/// let key = E2EKey.generate()                       // key.hex: 64 characters to copy to the other devices
/// let envelope = try key.seal(E2EMessage(title: "Front door", body: "Person detected"))
/// let message = try key.open(envelope)              // the receiver's rules applied
/// ```
public struct E2EKey: Sendable, Equatable {
    /// Why an envelope does not open; ``reason`` is a short sentence a receiver shows beside the placeholder.
    public enum OpenError: Error, Sendable, Equatable {
        /// The envelope's key id is not this key's.
        case keyIDMismatch(String)
        /// AES-GCM authentication failed: tampered with, or sealed under another key with the same id.
        case authenticationFailed
        /// The plaintext is not JSON.
        case notJSON
        /// The plaintext is JSON but not an object.
        case notObject
        /// `title` or `body` is missing or not a string.
        case titleOrBodyNotString
        /// `title` or `body` is an empty string.
        case titleOrBodyEmpty

        public var reason: String {
            switch self {
            case .keyIDMismatch(let keyID): "sealed for another key (\(keyID))"
            case .authenticationFailed: "authentication failed"
            case .notJSON: "the plaintext is not JSON"
            case .notObject: "the plaintext is not a JSON object"
            case .titleOrBodyNotString: "title and body must be strings"
            case .titleOrBodyEmpty: "title and body must not be empty"
            }
        }
    }

    /// Why a text is not a key.
    public struct KeyError: Error, Sendable, Equatable {
        public let reason = "an end-to-end key is 64 hexadecimal characters (32 bytes)"
    }

    /// Why a message cannot be sealed: its plaintext does not fit 3,072 characters of envelope.
    public struct TooLarge: Error, Sendable, Equatable {
        public let plaintextBytes: Int
        public var reason: String {
            "the sealed message takes \(plaintextBytes) bytes; an envelope holds at most \(E2EKey.maximumPlaintextBytes)"
        }
    }

    /// The largest plaintext whose envelope fits ``E2EEnvelope/maximumLength``.
    public static let maximumPlaintextBytes = 2266
    static let encInfo = Data("pushward/e2e/v1/enc".utf8)
    static let kidInfo = Data("pushward/e2e/v1/kid".utf8)

    /// The 32 bytes.
    public let bytes: Data
    /// The 8 lowercase hex characters that name the key (HKDF-SHA256, info `pushward/e2e/v1/kid`, 4 bytes).
    public let keyID: String
    let encryptionKey: SymmetricKey

    /// A key from its 64 hex characters; whitespace is ignored and either case accepted.
    public init(hex: String) throws(KeyError) {
        let digits = hex.unicodeScalars.filter { !$0.properties.isWhitespace }
        guard digits.count == 64 else { throw KeyError() }
        var bytes = Data(capacity: 32)
        var high: UInt8?
        for scalar in digits {
            guard scalar.isASCII, let nibble = UInt8(String(scalar), radix: 16) else { throw KeyError() }
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self.init(bytes: bytes)
    }

    /// A key from its 32 bytes.
    public init(bytes: Data) {
        precondition(bytes.count == 32, "a pw1 key is 32 bytes")
        self.bytes = bytes
        let ikm = SymmetricKey(data: bytes)
        encryptionKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, info: Self.encInfo, outputByteCount: 32)
        let kid = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, info: Self.kidInfo, outputByteCount: 4)
        keyID = kid.withUnsafeBytes { Self.hex($0) }
    }

    /// A fresh random key.
    public static func generate() -> E2EKey {
        E2EKey(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// The 64 lowercase hex characters.
    public var hex: String { Self.hex(bytes) }

    /// The AES-256 key (HKDF-SHA256, info `pushward/e2e/v1/enc`), as hex: for the vectors' `enc_key_hex`.
    public var encryptionKeyHex: String { encryptionKey.withUnsafeBytes { Self.hex($0) } }

    /// Seals `message`: its JSON, padded with spaces to a multiple of 64 bytes while the envelope still fits.
    public func seal(_ message: E2EMessage, nonce: AES.GCM.Nonce = AES.GCM.Nonce()) throws(TooLarge) -> E2EEnvelope {
        var plaintext = message.plaintext
        guard plaintext.count <= Self.maximumPlaintextBytes else { throw TooLarge(plaintextBytes: plaintext.count) }
        let padded = (plaintext.count + 63) / 64 * 64
        if padded <= Self.maximumPlaintextBytes {
            plaintext.append(contentsOf: repeatElement(UInt8(ascii: " "), count: padded - plaintext.count))
        }
        return try seal(plaintext: plaintext, nonce: nonce)
    }

    /// Seals exactly `plaintext` (no padding added): the vectors' cases.
    public func seal(plaintext: Data, nonce: AES.GCM.Nonce = AES.GCM.Nonce()) throws(TooLarge) -> E2EEnvelope {
        guard plaintext.count <= Self.maximumPlaintextBytes else { throw TooLarge(plaintextBytes: plaintext.count) }
        let additionalData = Data("\(E2EEnvelope.version).\(keyID)".utf8)
        // AES-GCM with a 32-byte key and a 12-byte nonce cannot fail.
        // swiftlint:disable:next force_try
        let box = try! AES.GCM.seal(plaintext, using: encryptionKey, nonce: nonce, authenticating: additionalData)
        let text = "\(E2EEnvelope.version).\(keyID).\(Base64URL.encode(Data(nonce) + box.ciphertext + box.tag))"
        do {
            return try E2EEnvelope(text)
        } catch {
            preconditionFailure("a sealed pw1 envelope has the shape it checks: \(error)")
        }
    }

    /// Opens `envelope` and applies the receiver's rules (``E2EMessage/init(plaintext:)``).
    public func open(_ envelope: E2EEnvelope) throws(OpenError) -> E2EMessage {
        try E2EMessage(plaintext: openPlaintext(envelope))
    }

    /// The plaintext bytes, unchecked beyond the tag.
    public func openPlaintext(_ envelope: E2EEnvelope) throws(OpenError) -> Data {
        guard envelope.keyID == keyID else { throw .keyIDMismatch(envelope.keyID) }
        let sealed = envelope.sealed
        guard sealed.count >= E2EEnvelope.minimumSealedBytes,
            let nonce = try? AES.GCM.Nonce(data: sealed.prefix(12)),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropFirst(12).dropLast(16), tag: sealed.suffix(16)),
            let plaintext = try? AES.GCM.open(box, using: encryptionKey, authenticating: envelope.additionalData)
        else { throw .authenticationFailed }
        return plaintext
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        for byte in bytes {
            text.append(HexDigits.lowercase(byte >> 4))
            text.append(HexDigits.lowercase(byte & 0x0F))
        }
        return String(decoding: text, as: UTF8.self)
    }
}
