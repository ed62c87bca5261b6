/// What an API token may do, on PushWard's two axes: a scope for activities and a capability for notifications
/// (PushWard's `openapi.yaml`, "Authentication"). A token created without `scopes` has all three.
public enum APITokenScope: String, Sendable, Codable, CaseIterable, Comparable {
    /// Read and `PATCH` activities, `GET /auth/me`.
    case activityUpdate = "activity:update"
    /// Everything `activity:update` allows, and creating and deleting activities.
    case activityManage = "activity:manage"
    /// `POST /notifications`.
    case notifications

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The grants of one API token: its scopes and the activity slugs it may touch.
///
/// ```swift
/// let grants = try APITokenGrants(scopes: ["activity:update"], slugs: ["oven", "printer-*"])
/// grants.allows(.activityUpdate)   // true
/// grants.allows(.activityManage)   // false: activity:update does not create or delete
/// grants.allows(slug: "printer-2") // true: a prefix ending in *
/// ```
public struct APITokenGrants: Sendable, Equatable {
    /// Slugs one token may list.
    public static let maximumSlugPatterns = 50

    public var scopes: Set<APITokenScope>
    /// Exact slugs, or prefixes ending in `*`; empty = every slug.
    public var slugPatterns: [String]

    /// All three scopes, every slug: what a token created without `scopes` or `slugs` gets.
    public static let everything = APITokenGrants(checkedScopes: Set(APITokenScope.allCases), slugPatterns: [])

    init(checkedScopes: Set<APITokenScope>, slugPatterns: [String]) {
        self.scopes = checkedScopes
        self.slugPatterns = slugPatterns
    }

    /// Grants from a request's `scopes` and `slugs` (either `nil` = not given); refuses unknown scopes, an empty scope
    /// list, and slug patterns that are not a slug or a slug prefix followed by one `*`.
    public init(scopes: [String]?, slugs: [String]?) throws(APITokenError) {
        var granted = Set(APITokenScope.allCases)
        if let scopes {
            guard !scopes.isEmpty else { throw .invalidGrant("scopes", "scopes must name at least one scope when given.") }
            granted = []
            for name in scopes {
                guard let scope = APITokenScope(rawValue: name) else {
                    let known = APITokenScope.allCases.map(\.rawValue).joined(separator: ", ")
                    throw .invalidGrant("scopes", "scopes: \"\(name)\" is not a scope; the scopes are \(known).")
                }
                granted.insert(scope)
            }
        }
        let patterns = slugs ?? []
        guard patterns.count <= Self.maximumSlugPatterns else {
            throw .invalidGrant("slugs", "slugs may list at most \(Self.maximumSlugPatterns) slugs or prefixes.")
        }
        for pattern in patterns where !Self.isSlugPattern(pattern) {
            throw .invalidGrant(
                "slugs",
                "slugs: \"\(pattern)\" is neither a slug (1 to 128 letters, digits, - and _, starting with a letter or digit) nor such a prefix followed by *.")
        }
        self.init(checkedScopes: granted, slugPatterns: patterns)
    }

    /// Whether the token has `scope`; `activity:manage` includes `activity:update`.
    public func allows(_ scope: APITokenScope) -> Bool {
        scopes.contains(scope) || (scope == .activityUpdate && scopes.contains(.activityManage))
    }

    /// Whether the token may touch the activity `slug`: no patterns, an equal one, or a prefix ending in `*`.
    public func allows(slug: String) -> Bool {
        slugPatterns.isEmpty
            || slugPatterns.contains { $0.hasSuffix("*") ? slug.hasPrefix($0.dropLast()) : $0 == slug }
    }

    /// PushWard's slug rule: 1 to 128 letters, digits, `-` and `_`, starting with a letter or digit.
    public static func isSlug(_ value: some StringProtocol) -> Bool {
        func isAlphanumeric(_ byte: UInt8) -> Bool { (97...122).contains(byte) || (65...90).contains(byte) || (48...57).contains(byte) }
        guard let first = value.utf8.first, isAlphanumeric(first), value.utf8.count <= 128 else { return false }
        return value.utf8.allSatisfy { isAlphanumeric($0) || $0 == 45 || $0 == 95 }
    }

    static func isSlugPattern(_ pattern: String) -> Bool {
        pattern.hasSuffix("*") ? (pattern == "*" || isSlug(pattern.dropLast())) : isSlug(pattern)
    }

    /// The stored form of the scopes: their names, sorted, comma-separated.
    public var storedScopes: String { scopes.sorted().map(\.rawValue).joined(separator: ",") }
    /// The stored form of the slug patterns: newline-separated (a slug holds no newline).
    public var storedSlugs: String { slugPatterns.joined(separator: "\n") }

    /// Grants read back from a store's columns (`nil` columns: a token from before scopes, which has everything).
    public init(storedScopes: String?, storedSlugs: String?) {
        let scopes = storedScopes.map { Set($0.split(separator: ",").compactMap { APITokenScope(rawValue: String($0)) }) }
        let slugs = storedSlugs.map { $0.split(separator: "\n").map(String.init) } ?? []
        self.init(checkedScopes: scopes ?? Set(APITokenScope.allCases), slugPatterns: slugs)
    }
}
