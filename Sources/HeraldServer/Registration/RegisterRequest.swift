import Foundation
import HeraldCore

/// `POST /api/push/register`: a new device, or a new token for an existing USER_ID.
struct RegisterRequest {
    var token: String?
    var platform: Platform
    var environment: PushEnvironment
    /// ActivityKit's push-to-start token (`live_activity_push_to_start_token`), lowercase hex; APNs devices only.
    var pushToStartToken: String?
    /// Present on re-registration (from the body or Basic credentials).
    var owner: (userID: String, secret: String)?

    /// Decodes and validates the body; `basic` are the request's Basic credentials, if any.
    init(_ body: JSONObject, basic: (userID: String, secret: String)?) throws {
        let fields = FieldReader(body)
        let platformName = try fields.optionalChoice("platform", from: Platform.allCases.map(\.rawValue)) ?? "apns"
        platform = Platform(rawValue: platformName) ?? .apns
        let environmentName =
            try fields.optionalChoice("environment", from: PushEnvironment.allCases.map(\.rawValue)) ?? "production"
        environment = PushEnvironment(rawValue: environmentName) ?? .production
        token = try Self.validToken(try fields.optionalString("token"), for: platform)
        pushToStartToken = try Self.validPushToStartToken(try fields.optionalString(Self.pushToStartField), for: platform)

        let userID = try fields.optionalString("user_id")
        let secret = try fields.optionalString("device_secret")
        switch (userID, secret) {
        case (let userID?, let secret?): owner = (userID, secret)
        case (nil, nil): owner = basic
        case (_?, nil): throw APIError.invalidField("device_secret", "device_secret is required with user_id.")
        case (nil, _?): throw APIError.invalidField("user_id", "user_id is required with device_secret.")
        }
        if let owner { _ = try UserIDRule.validated(owner.userID) }
    }

    /// The length of an APNs device token in hex digits: 64 today; Apple says not to assume a size, so up to 200.
    static let apnsTokenLength = 64...200
    /// The longest FCM registration token taken (they are about 160 characters today; Google documents no maximum).
    static let fcmTokenMaximumLength = 512

    /// Checks the token's form for its platform and normalises it (APNs tokens to lowercase hex), so that the same
    /// token in another letter case is the same token everywhere.
    static func validToken(_ token: String?, for platform: Platform) throws -> String? {
        switch platform {
        case .apns:
            guard let token else { throw APIError.invalidField("token", "token is required for platform apns.") }
            guard Secrets.isHex(token) else {
                throw APIError.invalidField("token", "token must be the APNs device token in hexadecimal.")
            }
            guard token.utf8.count % 2 == 0, apnsTokenLength.contains(token.utf8.count) else {
                throw APIError.invalidField(
                    "token",
                    "token must be an even number of hex characters from \(apnsTokenLength.lowerBound) to \(apnsTokenLength.upperBound); got \(token.utf8.count).")
            }
            return token.lowercased()
        case .fcm:
            guard let token else { throw APIError.invalidField("token", "token is required for platform fcm.") }
            guard (1...fcmTokenMaximumLength).contains(token.utf8.count) else {
                throw APIError.invalidField(
                    "token", "token must be an FCM registration token of 1 to \(fcmTokenMaximumLength) characters; got \(token.utf8.count).")
            }
            guard token.utf8.allSatisfy(Self.isFCMTokenCharacter) else {
                throw APIError.invalidField(
                    "token", "token must be an FCM registration token: letters, digits and - _ : . only.")
            }
            return token
        case .websocket:
            guard token == nil else {
                throw APIError.invalidField("token", "token must be absent for platform websocket.")
            }
            return nil
        }
    }

    static let pushToStartField = "live_activity_push_to_start_token"

    /// An ActivityKit push-to-start token: an APNs token (hex, as long as device tokens may be), for APNs devices only.
    static func validPushToStartToken(_ token: String?, for platform: Platform) throws -> String? {
        guard let token else { return nil }
        guard platform == .apns else {
            throw APIError.invalidField(pushToStartField, "\(pushToStartField) is only for platform apns.")
        }
        guard Secrets.isHex(token), token.utf8.count % 2 == 0, apnsTokenLength.contains(token.utf8.count) else {
            throw APIError.invalidField(
                pushToStartField,
                "\(pushToStartField) must be an APNs token: an even number of hex characters from \(apnsTokenLength.lowerBound) to \(apnsTokenLength.upperBound).")
        }
        return token.lowercased()
    }

    /// The characters of an FCM registration token (URL-safe base64 and the `:` after the instance id).
    private static func isFCMTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
