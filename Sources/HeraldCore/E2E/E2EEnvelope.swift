import Foundation

/// A `pw1` end-to-end envelope (PushWard's format, docs/e2e.md): `pw1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>`.
///
/// The server only checks the shape (``init(_:)``); it never holds a key. Sealing and opening
/// (``E2EKey/seal(_:)``, ``E2EKey/open(_:)``) are for the command line, the tests and the receivers.
///
/// ```swift
/// let envelope = try E2EEnvelope(text)      // E2EEnvelope.ShapeError when it is not a pw1 envelope
/// envelope.keyID                            // "767c0806": what the status API and the logs may show
/// ```
public struct E2EEnvelope: Sendable, Equatable {
    /// The only version defined.
    public static let version = "pw1"
    /// The longest envelope, in characters.
    public static let maximumLength = 3072
    /// Nonce (12), at least 2 bytes of ciphertext, tag (16).
    public static let minimumSealedBytes = 30
    /// 30 bytes in unpadded base64url.
    public static let minimumSealedCharacters = 40

    /// Why a text is not a `pw1` envelope; ``reason`` is the sentence a 400 answer carries.
    public enum ShapeError: Error, Sendable, Equatable {
        case empty
        case tooLong(Int)
        case parts
        case version
        case keyID
        case alphabet
        case tooShort
        case length
        case notCanonical

        public var reason: String {
            switch self {
            case .empty: "must not be empty"
            case .tooLong(let count): "must be at most \(E2EEnvelope.maximumLength) characters; got \(count)"
            case .parts: "must have three dot-separated parts: pw1.<key id>.<sealed bytes>"
            case .version: "must start with pw1 (the only version defined)"
            case .keyID: "must carry a key id of 8 lowercase hexadecimal characters"
            case .alphabet: "must be unpadded base64url (A-Z, a-z, 0-9, - and _, no =) after the key id"
            case .tooShort: "must carry at least \(E2EEnvelope.minimumSealedCharacters) base64url characters (30 bytes)"
            case .length: "has a base64url part whose length no unpadded encoding has"
            case .notCanonical: "has a base64url part that is not canonical (unused bits set)"
            }
        }
    }

    /// The envelope as it travels, unchanged.
    public let text: String
    /// The 8 lowercase hex characters of the key's id.
    public let keyID: String
    /// Nonce ‖ ciphertext ‖ tag.
    public let sealed: Data

    /// Checks the shape: `^pw1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{40,}$`, at most 3,072 characters, strict unpadded base64url.
    public init(_ text: String) throws(ShapeError) {
        guard !text.isEmpty else { throw .empty }
        let utf8 = Array(text.utf8)
        guard utf8.count <= Self.maximumLength else { throw .tooLong(text.count) }
        let parts = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .parts }
        guard Array(parts[0]) == Array(Self.version.utf8) else { throw .version }
        guard parts[1].count == 8, parts[1].allSatisfy(Self.isLowercaseHex) else { throw .keyID }
        let body = parts[2]
        guard body.allSatisfy(Self.isBase64URL) else { throw .alphabet }
        guard body.count >= Self.minimumSealedCharacters else { throw .tooShort }
        guard body.count % 4 != 1 else { throw .length }
        // The last character's bits past the last byte must be zero (4 of them after 2 characters, 2 after 3).
        let unusedMask: UInt8 = body.count % 4 == 2 ? 0x0F : body.count % 4 == 3 ? 0x03 : 0
        guard let last = body.last, Self.sextet(last) & unusedMask == 0 else { throw .notCanonical }
        let bodyText = String(decoding: body, as: UTF8.self)
        guard let sealed = Base64URL.decode(bodyText), sealed.count >= Self.minimumSealedBytes else { throw .length }
        self.text = text
        self.keyID = String(decoding: parts[1], as: UTF8.self)
        self.sealed = sealed
    }

    /// The additional data AES-GCM authenticates: the ASCII bytes `pw1.` + key id.
    var additionalData: Data { Data("\(Self.version).\(keyID)".utf8) }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func sextet(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        default: 63
        }
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}
