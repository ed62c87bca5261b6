import HeraldCore
import HeraldProviderKit

/// An FCM registration's address: `token`, the app's registration token, kept as it is (FCM tokens are case-sensitive).
///
/// | Field | Rule |
/// |---|---|
/// | `token` | required; 1 to 512 characters (about 160 today; Google documents no maximum) of letters, digits and `- _ : .` |
public struct FCMAddressRules: PushAddressRules {
    /// The longest FCM registration token taken.
    public static let maximumTokenLength = 512

    /// The rules.
    public init() {}

    public func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard let token = try registration.optionalString("token") else {
            throw RegistrationFieldError("token", "token is required for platform fcm.")
        }
        let maximum = Self.maximumTokenLength
        guard (1...maximum).contains(token.utf8.count) else {
            throw RegistrationFieldError(
                "token", "token must be an FCM registration token of 1 to \(maximum) characters; got \(token.utf8.count).")
        }
        guard token.utf8.allSatisfy(Self.isTokenCharacter) else {
            throw RegistrationFieldError("token", "token must be an FCM registration token: letters, digits and - _ : . only.")
        }
        return PushAddress(token: token)
    }

    /// The characters of an FCM registration token (URL-safe base64 and the `:` after the instance id).
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
