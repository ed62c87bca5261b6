import Foundation

/// Base64url without padding (RFC 7515 §2), the encoding of every JWT part (APNs provider tokens, FCM's OAuth
/// assertions).
public enum Base64URL {
    public static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
