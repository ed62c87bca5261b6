import Foundation
import HeraldCore
import HeraldProviderKit

/// `POST /api/push/register`: a new device, or a new token for an existing USER_ID.
///
/// The server reads `platform`, `environment`, the push-to-start token and the owner's fields; the address is read by
/// the rules of the platform's provider (``PushAddressRules``), so a provider added to the catalog is registered here
/// without a change (docs/providers.md). `websocket` has no provider: its device has no address.
struct RegisterRequest {
    var platform: Platform
    var environment: PushEnvironment
    /// The provider's address: the token (`nil` for a WebSocket-only device) and its own data.
    var address: PushAddress
    /// Whether the provider caps the distinct tokens of one device (Web Push endpoints).
    var capsDistinctTokens: Bool
    /// ActivityKit's push-to-start token (`live_activity_push_to_start_token`), lowercase hex; for providers that take
    /// them (APNs) only.
    var pushToStartToken: String?
    /// Present on re-registration (from the body or Basic credentials).
    var owner: (userID: String, secret: String)?

    /// Decodes and validates the body; `basic` are the request's Basic credentials, if any.
    init(_ body: JSONObject, basic: (userID: String, secret: String)?, providers: ProviderProfiles) throws {
        let fields = FieldReader(body)
        let names = Self.platformNames(providers)
        let platformName = try fields.optionalChoice("platform", from: names) ?? Platform.apns.rawValue
        platform = Platform(rawValue: platformName) ?? .apns
        let environmentName =
            try fields.optionalChoice("environment", from: PushEnvironment.allCases.map(\.rawValue)) ?? "production"
        environment = PushEnvironment(rawValue: environmentName) ?? .production
        let rules = providers[platform]?.addressRules ?? WebSocketAddressRules()
        do {
            address = try rules.address(from: RegistrationFields(body))
        } catch {
            throw APIError.invalidField(error.field, error.message)
        }
        capsDistinctTokens = rules.capsDistinctTokens
        pushToStartToken = try Self.validPushToStartToken(
            try fields.optionalString(Self.pushToStartField), for: platform, allowed: rules.takesPushToStartTokens)

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

    /// The `platform` values a registration may name: the built-in ones the server has (`websocket` always), in their
    /// documented order, then the catalog's others.
    static func platformNames(_ providers: ProviderProfiles) -> [String] {
        let known = Set(providers.all.map(\.platform) + [.websocket])
        let others = providers.all.map(\.platform).filter { !Platform.builtIn.contains($0) }
        return (Platform.builtIn.filter(known.contains) + others).map(\.rawValue)
    }

    static let pushToStartField = "live_activity_push_to_start_token"
    /// The length of an APNs token in hex digits (a push-to-start token, an activity token): 64 today, up to 200.
    static let apnsTokenLength = 64...200

    /// An ActivityKit push-to-start token: an APNs token (hex, as long as device tokens may be), for the providers
    /// that take them (APNs) only.
    static func validPushToStartToken(_ token: String?, for platform: Platform, allowed: Bool) throws -> String? {
        guard let token else { return nil }
        guard allowed else {
            throw APIError.invalidField(pushToStartField, "\(pushToStartField) is only for platform apns.")
        }
        let length = apnsTokenLength
        guard Secrets.isHex(token), token.utf8.count % 2 == 0, length.contains(token.utf8.count) else {
            throw APIError.invalidField(
                pushToStartField,
                "\(pushToStartField) must be an APNs token: an even number of hex characters from \(length.lowerBound) to \(length.upperBound).")
        }
        return token.lowercased()
    }
}

/// A WebSocket-only device has no provider and no address: a `token` is refused.
struct WebSocketAddressRules: PushAddressRules {
    func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard try registration.optionalString("token") == nil else {
            throw RegistrationFieldError("token", "token must be absent for platform websocket.")
        }
        return PushAddress(token: nil)
    }
}
