import Foundation

/// How a device receives notifications: the name of the provider that owns its address (`apns`, `fcm`, `webpush`),
/// or `websocket` for a device reached only through Herald's own channel.
///
/// An open set: a provider module names its own platform (``ProviderDescription``'s `platform`), and the server knows
/// the providers of its catalog. The names below are the built-in ones, as requests and responses spell them; nothing
/// in Core decides by them but the WebSocket channel.
///
/// ```swift
/// let pigeon = Platform(rawValue: "pigeon")!   // a provider of its own
/// Platform(rawValue: "Bad Name") == nil         // 1 to 32 of a-z, 0-9, `_` and `-`
/// ```
public struct Platform: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The name, as requests, responses, the store and metrics spell it.
    public let rawValue: String

    /// A platform named `rawValue`; `nil` unless it is 1 to 32 of `a-z`, `0-9`, `_` and `-`.
    public init?(rawValue: String) {
        guard (1...32).contains(rawValue.utf8.count), rawValue.utf8.allSatisfy(Self.isNameByte) else { return nil }
        self.rawValue = rawValue
    }

    private init(builtIn name: String) {
        rawValue = name
    }

    /// Apple Push Notification service.
    public static let apns = Platform(builtIn: "apns")
    /// Firebase Cloud Messaging (Android, and apps that use Firebase on every platform).
    public static let fcm = Platform(builtIn: "fcm")
    /// Only Herald's own WebSocket channel; the device has no cloud token.
    public static let websocket = Platform(builtIn: "websocket")
    /// Web Push (RFC 8030/8291/8292): a browser's push subscription; the token is its endpoint URL.
    public static let webpush = Platform(builtIn: "webpush")

    /// The built-in platforms, in the order their names are listed to clients.
    public static let builtIn: [Platform] = [.apns, .fcm, .websocket, .webpush]

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let platform = Platform(rawValue: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a platform name: \(name)"))
        }
        self = platform
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}

/// Where a provider delivers to a device, as the provider read it from a registration: the token (an APNs device
/// token, an FCM registration token, a Web Push endpoint URL; `nil` for a WebSocket-only device) and `data`, what else
/// the provider needs, in a form only the provider reads (Web Push: the subscription's keys). The device record and
/// the store keep `data` as opaque text.
public struct PushAddress: Sendable, Hashable {
    /// The provider's device token; several devices may have the same token.
    public var token: String?
    /// The provider's own data beside the token, opaque to everyone but the provider; `nil` when it needs none.
    public var data: String?

    /// Creates an address.
    public init(token: String?, data: String? = nil) {
        self.token = token
        self.data = data
    }
}

/// The APNs environment a device token belongs to.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case production
    case sandbox
}

/// A registered device: one USER_ID, one push address.
///
/// The USER_ID and the device secret are bearer secrets; the store keeps only their SHA-256 hashes.
public struct Device: Sendable, Equatable, Identifiable {
    public var id: UUID
    /// SHA-256 (lowercase hex) of the lowercase USER_ID.
    public var userIDHash: String
    /// SHA-256 (lowercase hex) of the device secret.
    public var secretHash: String
    /// The provider that owns ``address`` (or `websocket`).
    public var platform: Platform
    public var environment: PushEnvironment
    /// The provider's device token (APNs: lowercase hex); `nil` for WebSocket-only devices (and for devices whose
    /// token a Herald before schema v4 moved to another registration). Several devices may have the same token.
    public var token: String?
    /// The provider's own data beside ``token`` (Web Push: the subscription's keys), opaque to all but the provider.
    public var addressData: String?
    /// `false` once the provider said the token is dead; re-registration revives the device.
    public var isActive: Bool
    /// Why the device is inactive, as the provider or Herald said it.
    public var inactiveReason: String?
    /// An operator's per-device override of the daily limit.
    public var dailyLimit: Int?
    public var createdAt: Date
    public var updatedAt: Date
    /// The ActivityKit push-to-start token (APNs, lowercase hex, the device's environment) that starts a Live Activity
    /// Herald drives (PushWard's activity API); `nil` when the app gave none.
    public var pushToStartToken: String?

    public init(
        id: UUID = .random(), userIDHash: String, secretHash: String, platform: Platform, environment: PushEnvironment,
        token: String?, isActive: Bool = true, inactiveReason: String? = nil, dailyLimit: Int? = nil,
        createdAt: Date, updatedAt: Date, pushToStartToken: String? = nil, addressData: String? = nil
    ) {
        self.id = id
        self.userIDHash = userIDHash
        self.secretHash = secretHash
        self.platform = platform
        self.environment = environment
        self.token = token
        self.isActive = isActive
        self.inactiveReason = inactiveReason
        self.dailyLimit = dailyLimit
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.pushToStartToken = pushToStartToken
        self.addressData = addressData
    }

    /// Where the device's provider delivers: ``token`` and ``addressData``.
    public var address: PushAddress {
        get { PushAddress(token: token, data: addressData) }
        set {
            token = newValue.token
            addressData = newValue.data
        }
    }
}
