import Foundation
import HeraldCore

/// A compact JWS (`header.claims.signature`) split and decoded, not verified: what both doubles read from the JWTs
/// they are given (APNs provider tokens, Google service-account assertions), and the base64url they are made of.
struct CompactJWT: Sendable {
    /// The JOSE header.
    var header: JSONObject
    /// The claims.
    var claims: JSONObject
    /// The bytes the signature covers: `base64url(header) "." base64url(claims)`.
    var signingInput: Data
    /// The signature, or `nil` when the third part is not base64url.
    var signature: Data?

    /// Splits and decodes `text`; `nil` unless it has three parts whose first two are base64url JSON objects.
    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URLDecode(parts[0]),
            let claimsBytes = Self.base64URLDecode(parts[1]),
            case .object(let header)? = try? JSONValue.decode(headerBytes),
            case .object(let claims)? = try? JSONValue.decode(claimsBytes)
        else { return nil }
        self.header = header
        self.claims = claims
        self.signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        self.signature = Self.base64URLDecode(parts[2])
    }

    /// Whether `byte` is in the base64url alphabet (`A-Z a-z 0-9 - _`).
    static func isBase64URL(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95
    }

    /// Strict base64url: the URL alphabet only, no padding.
    static func base64URLDecode(_ text: Substring) -> Data? {
        guard !text.isEmpty, text.utf8.allSatisfy(isBase64URL) else { return nil }
        return Base64URL.decode(String(text))
    }
}
