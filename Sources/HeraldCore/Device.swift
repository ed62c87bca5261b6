import Foundation

/// How a device receives notifications.
public enum Platform: String, Sendable, Codable, CaseIterable {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging (Android, and apps that use Firebase on every platform).
    case fcm
    /// Only Herald's own WebSocket channel; the device has no cloud token.
    case websocket
    /// Web Push (RFC 8030/8291/8292): a browser's push subscription; the token is its endpoint URL.
    case webpush
}

/// A Web Push subscription's keys, as the browser gives them (`PushSubscription.toJSON().keys`, base64url): checked
/// by the server at registration (a 65-byte uncompressed P-256 point and a 16-byte secret).
public struct WebPushKeys: Sendable, Equatable, Hashable {
    /// The browser's P-256 public key (base64url of the uncompressed point).
    public var p256dh: String
    /// The authentication secret (base64url of 16 bytes).
    public var auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// The APNs environment a device token belongs to.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case production
    case sandbox
}

/// A registered device: one USER_ID, one push token.
///
/// The USER_ID and the device secret are bearer secrets; the store keeps only their SHA-256 hashes.
public struct Device: Sendable, Equatable, Identifiable {
    public var id: UUID
    /// SHA-256 (lowercase hex) of the lowercase USER_ID.
    public var userIDHash: String
    /// SHA-256 (lowercase hex) of the device secret.
    public var secretHash: String
    public var platform: Platform
    public var environment: PushEnvironment
    /// The provider's device token (APNs: lowercase hex); `nil` for WebSocket-only devices (and for devices whose
    /// token a Herald before schema v4 moved to another registration). Several devices may have the same token.
    public var token: String?
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
    /// A Web Push device's subscription keys (its endpoint is ``token``); `nil` for other platforms.
    public var webPushKeys: WebPushKeys?

    public init(
        id: UUID = .random(), userIDHash: String, secretHash: String, platform: Platform, environment: PushEnvironment,
        token: String?, isActive: Bool = true, inactiveReason: String? = nil, dailyLimit: Int? = nil,
        createdAt: Date, updatedAt: Date, pushToStartToken: String? = nil, webPushKeys: WebPushKeys? = nil
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
        self.webPushKeys = webPushKeys
    }
}
