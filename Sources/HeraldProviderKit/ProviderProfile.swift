import HeraldCore

/// What the server knows of one provider of its catalog, configured or not: what it is (``ProviderDescription``: its
/// names, limits and words), how it renders, and how a registration names its address. The dialects, the status API,
/// the inbox and the dashboard ask the profile of a device's platform instead of deciding by the platform's name.
public struct ProviderProfile: Sendable {
    /// Names, platform, limits and words.
    public let description: ProviderDescription
    /// The provider's payload.
    public let renderer: any PayloadRenderer
    /// The rules of a registration's address.
    public let addressRules: any PushAddressRules

    /// Creates a profile.
    public init(description: ProviderDescription, renderer: any PayloadRenderer, addressRules: any PushAddressRules) {
        self.description = description
        self.renderer = renderer
        self.addressRules = addressRules
    }

    /// The platform the provider reaches.
    public var platform: Platform { description.platform }
}

/// The profiles of a server's providers, by platform, with the one that speaks for a device without a provider of its
/// own (a WebSocket-only device gets the APNs payload, so APNs' words).
///
/// ```swift
/// let profiles = ProviderProfiles(try providerCatalog.map { try $0.profile(configuration) }, fallback: .apns)
/// profiles.profile(for: device.platform).description.possessiveName   // "APNs'"
/// ```
public struct ProviderProfiles: Sendable {
    /// The profiles, in the catalog's order.
    public let all: [ProviderProfile]
    private let byPlatform: [Platform: ProviderProfile]
    private let fallbackPlatform: Platform

    /// Profiles of `all` (the first of a platform wins); `fallback` names the profile of a platform without one.
    public init(_ all: [ProviderProfile], fallback: Platform) {
        self.all = all
        self.byPlatform = Dictionary(all.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.fallbackPlatform = fallback
    }

    /// The profile of `platform`'s own provider; `nil` for a platform without one (`websocket`).
    public subscript(platform: Platform) -> ProviderProfile? { byPlatform[platform] }

    /// The profile that renders and speaks for a device of `platform`: its own provider's, else the fallback's.
    public func profile(for platform: Platform) -> ProviderProfile? { byPlatform[platform] ?? byPlatform[fallbackPlatform] }

    /// How messages name the provider whose limits a device of `platform` meets: `APNs'`, `FCM's`, `Web Push's`.
    public func possessiveName(for platform: Platform) -> String {
        profile(for: platform)?.description.possessiveName ?? "the push service's"
    }

    /// Each platform's renderer, with the fallback's for a platform without one (`otherwise` when the fallback
    /// provider is not in the list).
    public func renderers(otherwise: any PayloadRenderer) -> PayloadRenderers {
        PayloadRenderers(byPlatform.mapValues(\.renderer), fallback: byPlatform[fallbackPlatform]?.renderer ?? otherwise)
    }
}
