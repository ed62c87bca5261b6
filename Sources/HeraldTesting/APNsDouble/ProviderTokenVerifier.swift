import Crypto
import Foundation
import HeraldCore

/// Decodes and verifies APNs provider tokens the way APNs does: ES256 over `header.claims` with the
/// registered public key of `kid`, raw r‖s signature, header `alg`/`kid` (and optionally `typ`),
/// claims exactly `iss` and an integer `iat`.
enum ProviderTokenVerifier {
    /// A token whose signature and shape check out; age, team and key relations are judged by the caller.
    struct Verified: Sendable, Equatable {
        var jwt: String
        var keyID: String
        var teamID: String
        var issuedAt: Int
    }

    /// What could be read from a token, and whether it verified.
    struct Inspection: Sendable {
        var decoded: APNsDouble.DecodedProviderToken?
        var verified: Verified?
    }

    static func inspect(_ jwt: String, keys: [String: APNsDouble.Key]) -> Inspection {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = base64URLDecode(parts[0]), let claimsBytes = base64URLDecode(parts[1]),
            case .object(let header)? = try? JSONValue.decode(headerBytes),
            case .object(let claims)? = try? JSONValue.decode(claimsBytes)
        else { return Inspection(decoded: nil, verified: nil) }
        let decoded = APNsDouble.DecodedProviderToken(jwt: jwt, header: header, claims: claims)

        guard header["alg"] == "ES256", Set(header.keys).isSubset(of: ["alg", "kid", "typ"]),
            let keyID = header["kid"]?.stringValue, let key = keys[keyID],
            Set(claims.keys) == ["iss", "iat"], let teamID = claims["iss"]?.stringValue,
            case .int(let issuedAt)? = claims["iat"],
            let signatureBytes = base64URLDecode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            signatureBytes.count == 64,
            key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return Inspection(decoded: decoded, verified: nil) }
        return Inspection(
            decoded: decoded, verified: Verified(jwt: jwt, keyID: keyID, teamID: teamID, issuedAt: issuedAt))
    }

    /// Strict base64url: the URL alphabet only, no padding.
    static func base64URLDecode(_ text: Substring) -> Data? {
        guard !text.isEmpty,
            text.utf8.allSatisfy({ byte in
                (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95
            })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
