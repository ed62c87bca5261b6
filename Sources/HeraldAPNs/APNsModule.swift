import HeraldCore
import HeraldProviderKit

/// The APNs provider as the composition root and the CLI see it (``ProviderModule``): its description, how it is
/// built, and `herald apns check`.
public enum APNsModule: ProviderModule {
    /// `apns`, for Apple devices.
    public static let description = ProviderDescription(
        name: "apns", displayName: "APNs", platform: .apns, credentialName: "provider token",
        notConfiguredNotice: "APNs is not configured (HERALD_APNS_KEY_PATH etc.): notifications for Apple devices stay queued",
        messageIDField: "apns_id", hasEnvironments: true)

    /// The payload: `aps` and the dialect's keys for APNs; an FCM `message` for FCM (docs/payloads.md).
    public static let renderer: any PayloadRenderer = APNsRenderer()

    /// `herald apns check`.
    public static let checkCommand = ProviderCheck(
        abstract: "Validate the APNs configuration and key offline and print what would be used.",
        notConfigured:
            "APNs is not configured: set HERALD_APNS_KEY_PATH, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC.")

    /// An ``APNsProvider`` on swift-nio's shared event loops.
    public static func makeProvider(_ configuration: APNsConfiguration, services: ProviderServices) throws -> APNsProvider {
        try APNsProvider(configuration: configuration, clock: services.clock, logger: services.logger, metrics: services.metrics)
    }

    /// ``APNsAddressRules``: a hex device token.
    public static func addressRules(_ configuration: APNsConfiguration?) -> any PushAddressRules { APNsAddressRules() }

    /// ``APNsConfiguration/check()``.
    public static func check(_ configuration: APNsConfiguration) throws -> [String] {
        try configuration.check()
    }
}
