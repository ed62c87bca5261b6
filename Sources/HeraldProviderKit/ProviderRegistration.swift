import HeraldCore

/// A registration's address refused by its provider's rules: the field at fault and the rule, as a 400 names them
/// (`{"error": "invalid_field", "field": "subscription.keys.auth", "message": "…"}`).
public struct RegistrationFieldError: Error, Sendable, Equatable {
    /// The field's path in the request body, e.g. `token` or `subscription.endpoint`.
    public var field: String
    /// The rule, in a sentence that names the field.
    public var message: String

    /// Creates the error.
    public init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }
}

/// A provider's rules for the address a registration names (`POST /api/push/register`): which fields carry it, their
/// form, and the form the store keeps (an APNs token in lowercase hex; Web Push's keys as ``PushAddress/data``).
///
/// ```swift
/// let address = try rules.address(from: RegistrationFields(body))   // {"platform": "apns", "token": "AB…"}
/// address.token   // "ab…"
/// ```
public protocol PushAddressRules: Sendable {
    /// Reads and checks the address in a registration's body; the platform and the owner's fields are read by the
    /// server.
    ///
    /// - Throws: ``RegistrationFieldError`` naming the field and the rule.
    func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress
    /// Whether a device on this provider may carry ActivityKit's push-to-start token (APNs only).
    var takesPushToStartTokens: Bool { get }
    /// Whether the distinct tokens one device may name over time are capped (Web Push: each endpoint is a URL Herald
    /// connects to).
    var capsDistinctTokens: Bool { get }
    /// How stored tokens are checked again at start-up against today's rules (Web Push: endpoints the egress rules
    /// now refuse); `nil` (the default): they are not.
    var storedTokenCheck: StoredTokenCheck? { get }
}

extension PushAddressRules {
    public var takesPushToStartTokens: Bool { false }
    public var capsDistinctTokens: Bool { false }
    public var storedTokenCheck: StoredTokenCheck? { nil }
}

/// A provider's check of its stored tokens at start-up: a device whose token today's rules refuse is deactivated, as a
/// dead token is, with ``reason``, and receives nothing until it registers again.
public struct StoredTokenCheck: Sendable {
    /// The reason a deactivated device shows (`inactive_reason`).
    public var reason: String
    /// Why today's rules refuse a stored token; `nil` when they take it.
    public var problem: @Sendable (String) -> String?

    /// Creates the check.
    public init(reason: String, problem: @escaping @Sendable (String) -> String?) {
        self.reason = reason
        self.problem = problem
    }
}

/// The rules of a provider that publishes none of its own: a `token` of 1 to 4,096 printable ASCII characters, kept
/// as it is.
public struct TokenAddressRules: PushAddressRules {
    /// The provider's platform, as the messages name it.
    public let platform: Platform
    /// The longest token taken, in bytes.
    public let maximumLength: Int

    /// Rules for `platform`'s tokens.
    public init(platform: Platform, maximumLength: Int = 4_096) {
        self.platform = platform
        self.maximumLength = maximumLength
    }

    public func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard let token = try registration.optionalString("token") else {
            throw RegistrationFieldError("token", "token is required for platform \(platform.rawValue).")
        }
        guard token.utf8.count <= maximumLength, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw RegistrationFieldError(
                "token", "token must be 1 to \(maximumLength) printable ASCII characters without spaces for platform \(platform.rawValue).")
        }
        return PushAddress(token: token)
    }
}

/// The fields of a registration's body, read as the server's own requests are (`null` is absent; a string where `""`
/// is absent too), with refusals that name the field.
public struct RegistrationFields: Sendable {
    /// The object read.
    public let object: JSONObject
    /// Its path in the body, e.g. `subscription`; empty at the top level.
    public let path: String

    /// Fields of `object`, found at `path` in the body.
    public init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    /// The path of `key` in the body.
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value, with `null` reported as absent.
    public func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    /// A string where `null` and `""` mean absent.
    public func optionalString(_ key: String) throws(RegistrationFieldError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let string) = value else { throw RegistrationFieldError(path(of: key), "\(path(of: key)) must be a string.") }
        return string.isEmpty ? nil : string
    }

    /// A string that must be present and not empty.
    public func requiredNonEmptyString(_ key: String) throws(RegistrationFieldError) -> String {
        guard let value = value(key) else { throw RegistrationFieldError(path(of: key), "\(path(of: key)) is required.") }
        guard case .string(let string) = value else { throw RegistrationFieldError(path(of: key), "\(path(of: key)) must be a string.") }
        guard !string.isEmpty else { throw RegistrationFieldError(path(of: key), "\(path(of: key)) must not be empty.") }
        return string
    }

    /// An object where `null` and `""` mean absent.
    public func optionalObject(_ key: String) throws(RegistrationFieldError) -> RegistrationFields? {
        guard let value = value(key), value != .string("") else { return nil }
        guard case .object(let object) = value else { throw RegistrationFieldError(path(of: key), "\(path(of: key)) must be an object.") }
        return RegistrationFields(object, path: path(of: key))
    }
}
