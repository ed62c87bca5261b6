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

    /// The bytes of base64url text, with or without padding; `nil` when it is not base64url.
    public static func decode(_ text: String) -> Data? {
        guard !text.contains(where: { $0 == "+" || $0 == "/" }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard = standard.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        if standard.count % 4 == 1 { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard)
    }
}
