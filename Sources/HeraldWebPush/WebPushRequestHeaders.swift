import Crypto
import Foundation
import HeraldCore

/// The RFC 8030 headers of one push message, from the notification: `TTL`, `Urgency` and `Topic`.
///
/// | Header | From |
/// |---|---|
/// | `TTL` | the seconds left until the notification expires (at least 0) |
/// | `Urgency` | the content's level: `time-sensitive` and `critical` → `high`, `passive` → `low`, otherwise `normal` |
/// | `Topic` | the collapse id when it is at most 32 base64url characters, otherwise the base64url of the first 24 bytes of its SHA-256 (32 characters) |
public enum WebPushRequestHeaders {
    /// The longest `Topic` RFC 8030 §5.4 allows.
    public static let maximumTopicLength = 32

    /// `TTL`: the whole seconds left until `expiresAt`, never negative.
    public static func timeToLive(expiresAt: Date, now: Date) -> Int {
        max(0, Int(expiresAt.timeIntervalSince(now).rounded(.down)))
    }

    /// `Urgency` for a content level (`nil`: the content says none, or the notification has no content).
    public static func urgency(_ level: NotificationContent.Level?) -> String {
        switch level {
        case .timeSensitive?, .critical?: "high"
        case .passive?: "low"
        case .active?, nil: "normal"
        }
    }

    /// `Topic` for a collapse id: the id itself when a push service takes it, a digest otherwise; `nil` without one.
    public static func topic(_ collapseID: String?) -> String? {
        guard let collapseID, !collapseID.isEmpty else { return nil }
        if collapseID.utf8.count <= maximumTopicLength, collapseID.utf8.allSatisfy(isBase64URLCharacter) { return collapseID }
        return Base64URL.encode(Data(SHA256.hash(data: Data(collapseID.utf8)).prefix(24)))
    }

    private static func isBase64URLCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
