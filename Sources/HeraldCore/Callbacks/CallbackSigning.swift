import Crypto
import Foundation

/// Signed callbacks as the Standard Webhooks specification (standardwebhooks.com) has them, with the secret derived
/// from the sending API token as PushWard derives it from its integration key.
///
/// - **Secret**: HMAC-SHA256 keyed by the raw 32-byte SHA-256 digest of the whole token text (`hrd_…`), over the bytes
///   `pushward/callback/v1`. Herald stores a token as the lowercase hex of exactly that digest
///   (``APIToken/tokenHash``), so the secret is derived from the stored hash; nothing more is kept. Shown to the
///   sender as `whsec_` + base64 of the 32 bytes (`herald token secret`).
/// - **Headers**: `webhook-id` (the same for every attempt of one callback: the receiver's idempotency key),
///   `webhook-timestamp` (seconds since 1970 at the attempt), `webhook-signature: v1,<base64 HMAC-SHA256 of
///   "id.timestamp.body">`.
///
/// ```swift
/// let secret = try #require(CallbackSigning.secret(tokenHash: token.tokenHash))
/// CallbackSigning.displayed(secret)                    // "whsec_…"
/// CallbackSigning.signature(id: "msg_1", timestamp: 1_700_000_000, body: body, secret: secret)   // "v1,…"
/// ```
public enum CallbackSigning {
    /// The bytes the secret is an HMAC of.
    public static let derivationLabel = Data("pushward/callback/v1".utf8)
    /// What a displayed secret starts with.
    public static let secretPrefix = "whsec_"

    /// The secret of a token whose text is `token`.
    public static func secret(tokenText token: String) -> Data {
        secret(digest: Data(SHA256.hash(data: Data(token.utf8))))
    }

    /// The secret of a token as the store keeps it (64 hex characters of its SHA-256); `nil` when `tokenHash` is not
    /// that.
    public static func secret(tokenHash: String) -> Data? {
        guard tokenHash.utf8.count == 64, let digest = hexBytes(tokenHash) else { return nil }
        return secret(digest: digest)
    }

    private static func secret(digest: Data) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: derivationLabel, using: SymmetricKey(data: digest)))
    }

    /// `whsec_` + base64 of the secret, the form Standard Webhooks libraries take.
    public static func displayed(_ secret: Data) -> String {
        secretPrefix + secret.base64EncodedString()
    }

    /// `v1,` + base64 of HMAC-SHA256(secret, "id.timestamp.body").
    public static func signature(id: String, timestamp: Int64, body: Data, secret: Data) -> String {
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(body)
        return "v1," + Data(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret))).base64EncodedString()
    }

    /// The three headers of one attempt, by lowercase name.
    public static func headers(id: String, at date: Date, body: Data, secret: Data) -> [(name: String, value: String)] {
        let timestamp = Int64(date.timeIntervalSince1970.rounded(.down))
        return [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(id: id, timestamp: timestamp, body: body, secret: secret)),
        ]
    }

    /// The bytes of an even-length hex text (either case); `nil` for anything else.
    private static func hexBytes(_ text: String) -> Data? {
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 48...57: byte - 48
            case 65...70: byte - 55
            case 97...102: byte - 87
            default: nil
            }
        }
        let bytes = Array(text.utf8)
        guard bytes.count.isMultiple(of: 2) else { return nil }
        var data = Data(capacity: bytes.count / 2)
        for index in stride(from: 0, to: bytes.count, by: 2) {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            data.append(high << 4 | low)
        }
        return data
    }
}
