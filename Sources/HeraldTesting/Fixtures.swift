import Foundation
import HeraldCore

/// Ready-made domain values for tests.
public enum Fixtures {
    /// A 64-hex APNs device token that differs per `seed`.
    public static func apnsToken(_ seed: Int = 1) -> String {
        String(repeating: String(format: "%02x", seed % 256), count: 32)
    }

    /// A device with fresh credentials; the plain USER_ID and secret are returned beside it.
    public static func device(
        platform: Platform = .apns, environment: PushEnvironment = .production, token: String? = apnsToken(),
        at date: Date = Date(timeIntervalSince1970: 1_763_769_600)
    ) -> (device: Device, userID: String, secret: String) {
        let userID = Secrets.random256BitHex()
        let secret = Secrets.random256BitHex()
        let device = Device(
            userIDHash: Secrets.hash(userID), secretHash: Secrets.hash(secret), platform: platform, environment: environment,
            token: platform == .websocket ? nil : token, createdAt: date, updatedAt: date)
        return (device, userID, secret)
    }

    /// A pending alert for `device` created at `date`.
    public static func notification(
        for device: Device, at date: Date = Date(timeIntervalSince1970: 1_763_769_600), title: String = "Hello",
        quotaDay: String? = nil, nextAttemptAt: Date? = nil, ttl: TimeInterval = 86_400
    ) -> PushNotification {
        let payload = try! JSONValue.object(["aps": ["alert": ["title": .string(title), "body": "World"]]]).encoded()
        return PushNotification(
            deviceID: device.id, pushType: .alert, priority: .high, collapseID: nil, payload: payload,
            quotaDay: quotaDay ?? UTCDay(containing: date).description, createdAt: date, nextAttemptAt: nextAttemptAt,
            expiresAt: date.addingTimeInterval(ttl))
    }
}
