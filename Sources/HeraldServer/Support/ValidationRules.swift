import HeraldCore

/// The one rule for a USER_ID as a sender or a device owner gives it: 64 hexadecimal characters in either letter case
/// (Herald hands them out in lowercase, ``Secrets/random256BitHex()``; lookups go by the lowercase form).
///
/// ```swift
/// let userID = try UserIDRule.validated(text)          // 400 invalid_field `user_id` otherwise
/// guard UserIDRule.accepts(pushToken) else { ... }     // where a refusal has another shape (Home Assistant's 403)
/// ```
public enum UserIDRule {
    /// Whether `value` has the form of a USER_ID.
    public static func accepts(_ value: String) -> Bool {
        Secrets.isHex256(value)
    }

    /// `value`, unchanged, when it has the form of a USER_ID; otherwise 400 `invalid_field` for `user_id`.
    static func validated(_ value: String) throws(APIError) -> String {
        guard accepts(value) else { throw APIError.invalidField("user_id", "user_id must be 64 hexadecimal characters.") }
        return value
    }
}

/// The one rule for a collapse id (`notification_id`, Home Assistant's `data.tag` and `apns-collapse-id`): at most
/// 64 bytes of UTF-8, the limit APNs sets on `apns-collapse-id`.
///
/// ```swift
/// notificationID = try fields.optionalString("notification_id").map { try CollapseIDRule.validated($0, field: "notification_id") }
/// ```
enum CollapseIDRule {
    /// The longest collapse id APNs takes, in bytes.
    static let maximumBytes = 64

    /// `value`, unchanged, when it fits; otherwise 400 `invalid_field` for `field` (its JSON path).
    static func validated(_ value: String, field: String) throws(APIError) -> String {
        guard value.utf8.count <= maximumBytes else {
            throw APIError.invalidField(
                field, "\(field) must be at most \(maximumBytes) bytes (it is the APNs collapse id); got \(value.utf8.count).")
        }
        return value
    }
}
