import Foundation
import HeraldCore
import HeraldProviderKit

/// A Web Push subscription's keys, as the browser gives them (`PushSubscription.toJSON().keys`, base64url): checked
/// at registration (a 65-byte uncompressed P-256 point and a 16-byte secret). The device keeps them as its address's
/// opaque data (``PushAddress/data``), in this module's form: `{"p256dh":"<base64url>","auth":"<base64url>"}`.
public struct WebPushKeys: Sendable, Equatable, Hashable {
    /// The browser's P-256 public key (base64url of the uncompressed point).
    public var p256dh: String
    /// The authentication secret (base64url of 16 bytes).
    public var auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The keys a device's address data holds; `nil` when it holds none (another provider's data, or none).
    public init?(addressData: String?) {
        guard let addressData, case .object(let object)? = try? JSONValue.decode(Data(addressData.utf8)),
            let p256dh = object["p256dh"]?.stringValue, let auth = object["auth"]?.stringValue
        else { return nil }
        self.init(p256dh: p256dh, auth: auth)
    }

    /// The address data that keeps them (base64url needs no escaping in JSON). Store migrations (SQLite v22,
    /// PostgreSQL 19) wrote the keys of devices registered before in the same form.
    public var addressData: String { #"{"p256dh":"\#(p256dh)","auth":"\#(auth)"}"# }
}

/// A Web Push registration's address, as a browser's `PushSubscription.toJSON()` gives it: the endpoint is the token,
/// the keys are the address's data.
///
/// ```json
/// {"platform": "webpush", "subscription": {"endpoint": "https://fcm.googleapis.com/fcm/send/…", "keys": {"p256dh": "<base64url>", "auth": "<base64url>"}}}
/// ```
///
/// | Field | Rule |
/// |---|---|
/// | `token` | absent |
/// | `subscription.endpoint` | an `https` URL whose host is a known push service or listed in `HERALD_WEBPUSH_ALLOWED_HOSTS` |
/// | `subscription.keys.p256dh` | base64url of a 65-byte uncompressed P-256 point on the curve |
/// | `subscription.keys.auth` | base64url of 16 bytes |
public struct WebPushAddressRules: PushAddressRules {
    /// Which endpoints a registration may name.
    public let policy: WebPushEgressPolicy

    /// Rules under `policy`.
    public init(policy: WebPushEgressPolicy) {
        self.policy = policy
    }

    public func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard try registration.optionalString("token") == nil else {
            throw RegistrationFieldError("token", "token must be absent for platform webpush: send subscription.")
        }
        guard let subscription = try registration.optionalObject("subscription") else {
            throw RegistrationFieldError("subscription", "subscription is required for platform webpush.")
        }
        let endpoint = try subscription.requiredNonEmptyString("endpoint")
        if let problem = policy.endpointProblem(endpoint) {
            throw RegistrationFieldError("subscription.endpoint", "subscription.endpoint \(problem).")
        }
        guard let keys = try subscription.optionalObject("keys") else {
            throw RegistrationFieldError("subscription.keys", "subscription.keys is required.")
        }
        let p256dh = try keys.requiredNonEmptyString("p256dh")
        let auth = try keys.requiredNonEmptyString("auth")
        do {
            _ = try WebPushEncryption.SubscriptionKeys(p256dh: p256dh, auth: auth)
        } catch .p256dh {
            throw RegistrationFieldError(
                "subscription.keys.p256dh", "subscription.keys.p256dh must be base64url of a 65-byte uncompressed P-256 point.")
        } catch {
            throw RegistrationFieldError("subscription.keys.auth", "subscription.keys.auth must be base64url of 16 bytes.")
        }
        return PushAddress(token: endpoint, data: WebPushKeys(p256dh: p256dh, auth: auth).addressData)
    }

    public var capsDistinctTokens: Bool { true }

    /// Endpoints registered under earlier rules (a known push service on a port other than 443, a port outside
    /// 1–65,535, a host no longer listed in `HERALD_WEBPUSH_ALLOWED_HOSTS`) are refused at start-up.
    public var storedTokenCheck: StoredTokenCheck? {
        StoredTokenCheck(reason: "Its Web Push endpoint is refused by the current rules; the browser must register again") {
            [policy] endpoint in policy.endpointProblem(endpoint)
        }
    }
}
