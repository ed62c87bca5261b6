import Crypto
import Foundation

/// Creation, hashing and comparison of the bearer secrets Herald hands out
/// (USER_IDs, device secrets, API tokens). Only hashes are ever stored.
public enum Secrets {
    /// 256 random bits as 64 lowercase hex characters.
    public static func random256BitHex() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The lowercase hex SHA-256 of a secret, which is what the stores keep.
    public static func hash(_ secret: String) -> String {
        hex(SHA256.hash(data: Data(secret.utf8)))
    }

    /// The first 128 bits of a secret's SHA-256 as two integers: an in-memory key for a credential (the
    /// failed-credential limiter's) that keeps no trace of the secret, without writing and parsing hex on every request.
    public static func fingerprint(_ secret: String) -> (high: UInt64, low: UInt64) {
        SHA256.hash(data: Data(secret.utf8)).withUnsafeBytes { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// Whether `secret` hashes to `expectedHash`, compared in constant time.
    public static func matches(_ secret: String, hash expectedHash: String) -> Bool {
        constantTimeEquals(hash(secret), expectedHash)
    }

    /// Compares two strings in time that depends only on their lengths.
    public static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// Whether the string is exactly 64 hex characters (either case), the form of a USER_ID and a device secret.
    public static func isHex256(_ value: String) -> Bool {
        value.utf8.count == 64 && isHex(value)
    }

    /// Whether every character is a hex digit (and there is at least one).
    public static func isHex(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }
    }

    /// Lowercase hex of some bytes, written into one buffer.
    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(HexDigits.lowercase(byte >> 4))
            text.append(HexDigits.lowercase(byte & 0x0F))
        }
        return String(decoding: text, as: UTF8.self)
    }
}
