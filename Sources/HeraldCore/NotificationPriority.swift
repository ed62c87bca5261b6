import Foundation

/// How urgently a provider should deliver a notification, in the three levels APNs knows (`apns-priority` 10, 5 and 1).
///
/// Each dialect maps its own words to it, each provider renders its own field from it:
///
/// | Level | APNs `apns-priority` | FCM `android.priority` |
/// |---|---|---|
/// | ``high`` | `10`: at once | `HIGH` |
/// | ``normal`` | `5`: when the device's power allows (background pushes must use it) | `NORMAL` |
/// | ``low`` | `1`: only when the device is awake anyway | `NORMAL` |
///
/// Every alert is ``high`` but a passive one (ntfy 1–2, Gotify 0–3, Bark's and the webhook presets' passive level:
/// ``alert(at:)``), which is ``normal``, as are a background push and a silent Live Activity update; Home Assistant's
/// `data.apns_headers.apns-priority` names any of the three.
///
/// FCM's renderer sends a passive notification at ``normal`` and every other at `HIGH`; Web Push's `Urgency` follows the
/// content's level (``NotificationContent/Level``), which says more than the priority (docs/payloads.md).
///
/// The store keeps the APNs number (``apnsValue``), as it did when the priority was a bare number, so older rows read back
/// unchanged (``init(stored:)``). Written as a literal, a priority is its APNs number: `priority: 10` is ``high``.
public enum NotificationPriority: Int, Sendable, CaseIterable, Comparable, ExpressibleByIntegerLiteral {
    /// APNs 1: prioritise the device's power over all else; never wakes it.
    case low = 1
    /// APNs 5: delivered when the device's power allows; the only level a background push may use.
    case normal = 5
    /// APNs 10: delivered at once.
    case high = 10

    /// The `apns-priority` number.
    public var apnsValue: Int { rawValue }

    /// The level of an `apns-priority` number (1, 5 or 10); `nil` for any other.
    public init?(apnsValue: Int) {
        self.init(rawValue: apnsValue)
    }

    /// The level of a stored number. Herald only ever stored 1, 5 and 10; any other number (a row written by hand) reads
    /// as the level just below it, never higher than it says: 10 and more ``high``, 5 to 9 ``normal``, less ``low``.
    public init(stored value: Int) {
        self = value >= 10 ? .high : value >= 5 ? .normal : .low
    }

    /// A literal is an APNs number (1, 5 or 10), read as a stored one is (``init(stored:)``), so that no number
    /// written in code can stop the process. Source code only; input is read with ``init(apnsValue:)``, which refuses
    /// other numbers.
    public init(integerLiteral value: Int) {
        self.init(stored: value)
    }

    /// The priority of an alert at `level`: ``normal`` for a passive one (it need not wake the device), ``high`` for
    /// every other level and for none (the platform's default). The rule every sender dialect and FCM's renderer use.
    public static func alert(at level: NotificationContent.Level?) -> NotificationPriority {
        level == .passive ? .normal : .high
    }

    public static func < (lhs: NotificationPriority, rhs: NotificationPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
