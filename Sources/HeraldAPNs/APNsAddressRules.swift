import HeraldCore
import HeraldProviderKit

/// An APNs registration's address: `token`, the device token in hexadecimal, kept in lowercase so that the same token
/// in another letter case is the same token everywhere. An APNs device may also carry ActivityKit's push-to-start token.
///
/// | Field | Rule |
/// |---|---|
/// | `token` | required; an even number of hex characters from 64 to 200 (64 today; Apple says not to assume a size) |
public struct APNsAddressRules: PushAddressRules {
    /// The length of an APNs device token in hex digits.
    public static let tokenLength = 64...200

    /// The rules.
    public init() {}

    public func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard let token = try registration.optionalString("token") else {
            throw RegistrationFieldError("token", "token is required for platform apns.")
        }
        guard Secrets.isHex(token) else {
            throw RegistrationFieldError("token", "token must be the APNs device token in hexadecimal.")
        }
        let length = Self.tokenLength
        guard token.utf8.count % 2 == 0, length.contains(token.utf8.count) else {
            throw RegistrationFieldError(
                "token",
                "token must be an even number of hex characters from \(length.lowerBound) to \(length.upperBound); got \(token.utf8.count).")
        }
        return PushAddress(token: token.lowercased())
    }

    public var takesPushToStartTokens: Bool { true }
}
