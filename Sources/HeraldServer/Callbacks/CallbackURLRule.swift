import Foundation
import HeraldCore
import HeraldWebPush

/// Which URLs may receive callbacks (`callback_url` on `POST /notifications`, a token's outcome callback URL): checked
/// when the sender gives one, and again, with the addresses its host resolves to, before every attempt.
///
/// - `https://` only, at most ``maximumLength`` bytes, a host, no user or password, a port from 1 to 65,535.
/// - A host that is an address (or `localhost`) must be public unless a network of `HERALD_CALLBACK_ALLOWED_NETWORKS`
///   contains it. A host name is resolved at each attempt: one that resolves to a refused address fails the callback
///   (it is not retried).
///
/// ```swift
/// try CallbackURLRule.validated("https://hooks.example.com/herald", field: "callback_url", policy: policy)
/// ```
public enum CallbackURLRule {
    /// The longest callback URL, in bytes.
    public static let maximumLength = 2_048
    /// The option that lists allowed networks, for messages.
    static let option = CallbackOption.allowedNetworks.rawValue

    /// The URL when it may receive callbacks; otherwise a 400 `invalid_field` naming `field`.
    static func validated(_ raw: String, field: String, policy: WebPushEgressPolicy?) throws -> String {
        if let problem = problem(raw, policy: policy) {
            throw APIError.invalidField(field, "\(field) \(problem).")
        }
        return raw
    }

    /// Why `raw` cannot receive callbacks; `nil` when it can. Without a policy the address is not checked.
    public static func problem(_ raw: String, policy: WebPushEgressPolicy?) -> String? {
        guard !raw.isEmpty else { return "must not be empty" }
        guard raw.utf8.count <= maximumLength else { return "must be at most \(maximumLength) bytes; got \(raw.utf8.count)" }
        guard !raw.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            return "must not contain spaces or control characters"
        }
        guard let url = URL(string: raw), url.scheme?.lowercased() == "https" else { return "must be an https:// URL" }
        guard let host = url.host?.lowercased(), !host.isEmpty else { return "must name a host" }
        guard url.user == nil, url.password == nil else { return "must not carry a user or password" }
        let port = url.port ?? 443
        guard (1...65_535).contains(port) else { return "must name a port from 1 to 65535; got \(port)" }
        if let policy, let refusal = refusal(host: host, policy: policy) { return "is not allowed: \(refusal)" }
        return nil
    }

    /// The refusal of a host that needs no lookup (an address, `localhost`); `nil` for a name, resolved at each attempt.
    static func refusal(host: String, policy: WebPushEgressPolicy) -> String? {
        let addresses: [IPAddressBytes]
        if let address = IPAddressBytes(host) {
            addresses = [address]
        } else if host == "localhost" || host.hasSuffix(".localhost") {
            addresses = [IPAddressBytes("127.0.0.1")].compactMap { $0 }
        } else {
            return nil
        }
        return policy.refusal(host: host, addresses: addresses, option: option)
    }
}
