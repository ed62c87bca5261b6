import HeraldCore
import HeraldWebPush

/// The `subscription` of a Web Push registration, as a browser's `PushSubscription.toJSON()` gives it:
///
/// ```json
/// {"endpoint": "https://fcm.googleapis.com/fcm/send/…", "keys": {"p256dh": "<base64url>", "auth": "<base64url>"}}
/// ```
///
/// | Field | Rule |
/// |---|---|
/// | `subscription.endpoint` | an `https` URL whose host is a known push service or listed in `HERALD_WEBPUSH_ALLOWED_HOSTS` |
/// | `subscription.keys.p256dh` | base64url of a 65-byte uncompressed P-256 point on the curve |
/// | `subscription.keys.auth` | base64url of 16 bytes |
enum WebPushSubscriptionRules {
    /// Reads and checks the `subscription` of `fields`.
    ///
    /// - Throws: ``APIError/invalidField(_:_:)`` naming the field and the rule.
    static func validated(_ fields: FieldReader, policy: WebPushEgressPolicy) throws -> (endpoint: String, keys: WebPushKeys) {
        guard let subscription = try fields.optionalObject("subscription") else {
            throw APIError.invalidField("subscription", "subscription is required for platform webpush.")
        }
        let endpoint = try subscription.requiredNonEmptyString("endpoint")
        if let problem = policy.endpointProblem(endpoint) {
            throw APIError.invalidField("subscription.endpoint", "subscription.endpoint \(problem).")
        }
        guard let keys = try subscription.optionalObject("keys") else {
            throw APIError.invalidField("subscription.keys", "subscription.keys is required.")
        }
        let p256dh = try keys.requiredNonEmptyString("p256dh")
        let auth = try keys.requiredNonEmptyString("auth")
        do {
            _ = try WebPushEncryption.SubscriptionKeys(p256dh: p256dh, auth: auth)
        } catch .p256dh {
            throw APIError.invalidField(
                "subscription.keys.p256dh", "subscription.keys.p256dh must be base64url of a 65-byte uncompressed P-256 point.")
        } catch {
            throw APIError.invalidField("subscription.keys.auth", "subscription.keys.auth must be base64url of 16 bytes.")
        }
        return (endpoint, WebPushKeys(p256dh: p256dh, auth: auth))
    }
}
