import Foundation

/// How a device receives notifications.
public enum Platform: String, Sendable, Codable, CaseIterable {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging (Android, and apps that use Firebase on every platform).
    case fcm
    /// Only Herald's own WebSocket channel; the device has no cloud token.
    case websocket
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

    public init(
        id: UUID = .random(), userIDHash: String, secretHash: String, platform: Platform, environment: PushEnvironment,
        token: String?, isActive: Bool = true, inactiveReason: String? = nil, dailyLimit: Int? = nil,
        createdAt: Date, updatedAt: Date, pushToStartToken: String? = nil
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
    }
}
