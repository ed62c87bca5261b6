import Crypto
import Foundation

/// A compact JWS signed with ES256 (P-256, SHA-256): `base64url(header).base64url(claims).base64url(r‖s)`. What
/// APNs provider tokens and Web Push's VAPID tokens are.
public enum ES256JWT {
    /// The signed token. The header and claims are written with sorted keys, so the same input gives the same bytes
    /// before the signature. P-256 signing fails only if the system's random source does; the signature is then
    /// empty, and the service refuses the token (reported, rather than crashing the server).
    public static func sign(header: JSONObject, claims: JSONObject, with key: P256.Signing.PrivateKey) -> String {
        let headerBytes = (try? JSONValue.object(header).encoded()) ?? Data()
        let claimsBytes = (try? JSONValue.object(claims).encoded()) ?? Data()
        let signingInput = Base64URL.encode(headerBytes) + "." + Base64URL.encode(claimsBytes)
        let signature = (try? key.signature(for: Data(signingInput.utf8)).rawRepresentation) ?? Data()
        return signingInput + "." + Base64URL.encode(signature)
    }
}
