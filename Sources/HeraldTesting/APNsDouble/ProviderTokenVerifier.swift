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
        guard let token = CompactJWT(jwt) else { return Inspection(decoded: nil, verified: nil) }
        let header = token.header
        let claims = token.claims
        let decoded = APNsDouble.DecodedProviderToken(jwt: jwt, header: header, claims: claims)

        guard header["alg"] == "ES256", Set(header.keys).isSubset(of: ["alg", "kid", "typ"]),
            let keyID = header["kid"]?.stringValue, let key = keys[keyID],
            Set(claims.keys) == ["iss", "iat"], let teamID = claims["iss"]?.stringValue,
            case .int(let issuedAt)? = claims["iat"],
            let signatureBytes = token.signature, signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.publicKey.isValidSignature(signature, for: token.signingInput)
        else { return Inspection(decoded: decoded, verified: nil) }
        return Inspection(
            decoded: decoded, verified: Verified(jwt: jwt, keyID: keyID, teamID: teamID, issuedAt: issuedAt))
    }
}
