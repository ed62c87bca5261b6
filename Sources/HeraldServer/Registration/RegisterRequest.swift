import Foundation
import HeraldCore

/// `POST /api/push/register`: a new device, or a new token for an existing USER_ID.
struct RegisterRequest {
    var token: String?
    var platform: Platform
    var environment: PushEnvironment
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

        let userID = try fields.optionalString("user_id")
        let secret = try fields.optionalString("device_secret")
        switch (userID, secret) {
        case (let userID?, let secret?): owner = (userID, secret)
        case (nil, nil): owner = basic
        case (_?, nil): throw APIError.invalidField("device_secret", "device_secret is required with user_id.")
        case (nil, _?): throw APIError.invalidField("user_id", "user_id is required with device_secret.")
        }
        if let owner, !Secrets.isHex256(owner.userID) {
            throw APIError.invalidField("user_id", "user_id must be 64 hexadecimal characters.")
        }
    }

    /// Checks the token's form for its platform and normalises it (APNs tokens to lowercase hex).
    static func validToken(_ token: String?, for platform: Platform) throws -> String? {
        switch platform {
        case .apns:
            guard let token else { throw APIError.invalidField("token", "token is required for platform apns.") }
            guard Secrets.isHex(token) else {
                throw APIError.invalidField("token", "token must be the APNs device token in hexadecimal.")
            }
            guard token.count % 2 == 0, (64...200).contains(token.count) else {
                throw APIError.invalidField(
                    "token", "token must be an even number of hex characters between 64 and 200; got \(token.count).")
            }
            return token.lowercased()
        case .fcm:
            guard let token else { throw APIError.invalidField("token", "token is required for platform fcm.") }
            guard token.count <= 4096, !token.contains(where: \.isWhitespace) else {
                throw APIError.invalidField("token", "token must be an FCM registration token (no spaces, at most 4096 characters).")
            }
            return token
        case .websocket:
            guard token == nil else {
                throw APIError.invalidField("token", "token must be absent for platform websocket.")
            }
            return nil
        }
    }
}
