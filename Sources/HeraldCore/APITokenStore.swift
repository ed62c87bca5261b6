import Foundation

/// A named API token: a bearer secret that lets a sender push to one device through `POST /notifications`.
///
/// The token text (`hrd_` + 64 hex) is shown once, when it is created; the store keeps only its SHA-256.
public struct APIToken: Sendable, Equatable, Identifiable {
    public var id: UUID
    /// The only device this token sends to.
    public var deviceID: Device.ID
    /// The owner's label, unique among the device's active tokens.
    public var name: String
    /// SHA-256 (lowercase hex) of the token text.
    public var tokenHash: String
    public var createdAt: Date
    /// The last time the token authorised a request; `nil` when it never did.
    public var lastUsedAt: Date?
    /// When the token was revoked; `nil` while it is active.
    public var revokedAt: Date?
    /// Its scopes and the activity slugs it may touch (``APITokenGrants/everything`` unless it was created with less).
    public var grants: APITokenGrants

    public init(
        id: UUID = .random(), deviceID: Device.ID, name: String, tokenHash: String, createdAt: Date, lastUsedAt: Date? = nil,
        revokedAt: Date? = nil, grants: APITokenGrants = .everything
    ) {
        self.id = id
        self.deviceID = deviceID
        self.name = name
        self.tokenHash = tokenHash
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
        self.grants = grants
    }

    /// Whether the token was revoked (it then authorises nothing).
    public var isRevoked: Bool { revokedAt != nil }
}

/// What the store did with a new token.
public enum APITokenInsertOutcome: Sendable, Equatable {
    /// Stored.
    case inserted
    /// Not stored: the device already has an active token with this name.
    case nameTaken
    /// Not stored: the device already has the maximum number of active tokens.
    case limitReached
}

/// Which token to revoke.
public enum APITokenSelector: Sendable, Equatable {
    case id(APIToken.ID)
    case name(String)
}

/// API tokens. Every token belongs to one device and disappears with it.
public protocol APITokenStore: Sendable {
    /// Atomically: stores `token` unless the device already has an active token with its name or
    /// `maximumActive` active tokens.
    func insertAPIToken(_ token: APIToken, maximumActive: Int) async throws -> APITokenInsertOutcome
    /// The token (active or revoked) whose text hashes to `tokenHash`.
    func apiToken(tokenHash: String) async throws -> APIToken?
    /// The device's tokens, active and revoked, oldest first.
    func apiTokens(deviceID: Device.ID) async throws -> [APIToken]
    /// Revokes the device's active token that `selector` names and returns it as revoked; `nil` when there is none.
    func revokeAPIToken(_ selector: APITokenSelector, deviceID: Device.ID, at date: Date) async throws -> APIToken?
    /// Records that the token authorised a request at `date`.
    func touchAPIToken(id: APIToken.ID, at date: Date) async throws
}
