import HeraldCore

/// A USER_ID as a request gives it: the rule is ``UserID``'s (64 hexadecimal characters in either letter case, looked
/// up by the lowercase form); a refusal is this API's 400 `invalid_field` for `user_id`.
///
/// ```swift
/// let userID = try UserIDRule.userID(text)            // 400 invalid_field `user_id` otherwise
/// guard let userID = UserID(pushToken) else { ... }   // where a refusal has another shape (Home Assistant's 403)
/// ```
public enum UserIDRule {
    /// Whether `value` has the form of a USER_ID.
    public static func accepts(_ value: String) -> Bool {
        UserID.accepts(value)
    }

    /// `value`, unchanged, when it has the form of a USER_ID; otherwise 400 `invalid_field` for `user_id`.
    static func validated(_ value: String) throws(APIError) -> String {
        _ = try userID(value)
        return value
    }

    /// The USER_ID `value` stands for; 400 `invalid_field` for `user_id` when it has not the form of one.
    static func userID(_ value: String) throws(APIError) -> UserID {
        guard let userID = UserID(value) else { throw refusal }
        return userID
    }

    /// The 400 for a `user_id` that is not a USER_ID.
    static var refusal: APIError { APIError.invalidField("user_id", "user_id must be 64 hexadecimal characters.") }
}

/// The one rule for a sender's value that Herald sends on as an HTTP/2 header value (the APNs collapse id): no control
/// character. RFC 9113 §8.2.1 forbids NUL, LF and CR in a field value, and swift-nio-http2 refuses to send one (the
/// notification could never be delivered); the other C0 controls, DEL and the C1 controls have no place in a header
/// either, and would reach the text log as they are.
///
/// ```swift
/// let collapseID = try HeaderValueRule.validated(text, field: "data.tag")   // 400 invalid_field otherwise
/// ```
enum HeaderValueRule {
    /// Whether `value` has no control character (U+0000–U+001F, U+007F, U+0080–U+009F).
    static func accepts(_ value: String) -> Bool {
        !value.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// `value`, unchanged, when it has no control character; otherwise 400 `invalid_field` for `field` (its JSON path).
    static func validated(_ value: String, field: String) throws(APIError) -> String {
        guard accepts(value) else {
            throw APIError.invalidField(
                field, "\(field) must not contain control characters (CR, LF, NUL, tab and the like): it is sent as an HTTP/2 header value.")
        }
        return value
    }
}

/// The one rule for a collapse id (`notification_id`, Home Assistant's `data.tag` and `apns-collapse-id`): at most
/// 64 bytes of UTF-8, the limit APNs sets on `apns-collapse-id`, and no control character (``HeaderValueRule``).
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
        return try HeaderValueRule.validated(value, field: field)
    }
}
