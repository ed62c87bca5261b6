import Foundation

/// The lifecycle of API tokens: issuing, listing, revoking and checking them. The HTTP API
/// (`/api/push/tokens`, `POST /notifications`) and `herald token` both go through it, so the rules live in one place.
///
/// ```swift
/// let tokens = APITokenManager(store: store)
/// let issued = try await tokens.create(name: "Home Assistant", for: device)
/// print(issued.secret)   // hrd_…, shown once; the store keeps only its SHA-256
/// ```
///
/// Refusals are ``APITokenError``s (a name that breaks a rule, a name in use, too many tokens, an unknown token).
public struct APITokenManager: Sendable {
    /// What every token starts with.
    public static let prefix = "hrd_"
    /// Active tokens one device may hold.
    public static let maximumActivePerDevice = 100
    /// The longest name, in characters.
    public static let maximumNameLength = 64

    /// A newly created token and its text, which is not available again.
    public struct Issued: Sendable {
        public var token: APIToken
        /// `hrd_` + 64 lowercase hex characters (256 random bits).
        public var secret: String
    }

    private let store: any APITokenStore & DeviceStore
    private let clock: any WallClock

    public init(store: any APITokenStore & DeviceStore, clock: any WallClock = SystemClock()) {
        self.store = store
        self.clock = clock
    }

    /// Creates a token named `name` for `device`, with `grants` (every scope and slug unless given).
    public func create(name: String, grants: APITokenGrants = .everything, for device: Device) async throws(APITokenError) -> Issued {
        let name = try Self.validName(name)
        let secret = Self.prefix + Secrets.random256BitHex()
        let token = APIToken(
            deviceID: device.id, name: name, tokenHash: Secrets.hash(secret), createdAt: clock.now(), grants: grants)
        switch try await storeCall({ try await store.insertAPIToken(token, maximumActive: Self.maximumActivePerDevice) }) {
        case .inserted: return Issued(token: token, secret: secret)
        case .nameTaken: throw .nameTaken(name)
        case .limitReached: throw .tooManyTokens(maximum: Self.maximumActivePerDevice)
        }
    }

    /// The device's active tokens, oldest first.
    public func activeTokens(of device: Device) async throws(APITokenError) -> [APIToken] {
        try await storeCall { try await store.apiTokens(deviceID: device.id) }.filter { !$0.isRevoked }
    }

    /// Revokes the device's active token whose id (tried first) or name is `idOrName`; ``APITokenError/notFound`` when
    /// there is none.
    public func revoke(_ idOrName: String, of device: Device) async throws(APITokenError) -> APIToken {
        let now = clock.now()
        if let id = UUID(uuidString: idOrName),
            let revoked = try await storeCall({ try await store.revokeAPIToken(.id(id), deviceID: device.id, at: now) })
        {
            return revoked
        }
        guard let revoked = try await storeCall({ try await store.revokeAPIToken(.name(idOrName), deviceID: device.id, at: now) })
        else { throw .notFound }
        return revoked
    }

    /// The token and device an `hrd_…` bearer value stands for, recording the use; ``APITokenError/tokenRequired``
    /// without one, ``APITokenError/invalidToken`` or ``APITokenError/revokedToken`` when it does not authenticate.
    public func authenticate(bearer: String?) async throws(APITokenError) -> (token: APIToken, device: Device) {
        guard let bearer else { throw .tokenRequired }
        guard Self.isWellFormed(bearer) else { throw .invalidToken }
        let hash = Secrets.hash(bearer)
        guard let token = try await storeCall({ try await store.apiToken(tokenHash: hash) }),
            Secrets.constantTimeEquals(token.tokenHash, hash)
        else { throw .invalidToken }
        guard !token.isRevoked else { throw .revokedToken }
        guard let device = try await storeCall({ try await store.device(id: token.deviceID) }) else { throw .invalidToken }
        let now = clock.now()
        var used = token
        if Self.isUseWorthRecording(now, lastRecorded: token.lastUsedAt) {
            try await storeCall { try await store.touchAPIToken(id: token.id, at: now) }
            used.lastUsedAt = now
        }
        return (used, device)
    }

    /// How stale `last_used_at` may be: a use is written when the last one written is at least this old (or in the
    /// future), so that a token used many times a second (PushWard's activity updates) costs no write per request.
    public static let lastUseResolution: TimeInterval = 60

    /// Whether a use at `now` is written (``lastUseResolution``).
    public static func isUseWorthRecording(_ now: Date, lastRecorded: Date?) -> Bool {
        guard let lastRecorded else { return true }
        let age = now.timeIntervalSince(lastRecorded)
        return !(0..<lastUseResolution).contains(age)
    }

    /// Whether `value` has the form of a token: the prefix and 64 lowercase hex characters.
    public static func isWellFormed(_ value: String) -> Bool {
        guard value.hasPrefix(prefix) else { return false }
        let hex = value.dropFirst(prefix.count)
        return hex.utf8.count == 64 && hex.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A name trimmed of surrounding white space: 1 to 64 characters, no control characters.
    static func validName(_ name: String) throws(APITokenError) -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalidName("name must not be empty.") }
        guard trimmed.count <= maximumNameLength else {
            throw .invalidName("name must be at most \(maximumNameLength) characters; got \(trimmed.count).")
        }
        guard !trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
            throw .invalidName("name must not contain control characters.")
        }
        return trimmed
    }

    private func storeCall<Value>(_ call: () async throws -> Value) async throws(APITokenError) -> Value {
        try await StoreUnavailable.during(as: APITokenError.storeUnavailable, call)
    }
}
