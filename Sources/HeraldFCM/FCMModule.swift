import HeraldCore
import HeraldProviderKit
import Logging

/// The FCM provider as the composition root and the CLI see it (``ProviderModule``): its description and limits, how
/// it is built, and `herald fcm check`.
public enum FCMModule: ProviderModule {
    /// `fcm`, for FCM devices; `android.ttl` up to four weeks.
    public static let description = ProviderDescription(
        name: "fcm", displayName: "FCM", platform: .fcm, credentialName: "access token",
        notConfiguredNotice: "FCM is not configured (HERALD_FCM_SERVICE_ACCOUNT): notifications for FCM devices stay queued",
        limits: ProviderLimits(maximumTimeToLive: FCMMessageRules.maximumTTL))

    /// The payload: `aps` and the dialect's keys for APNs; an FCM `message` for FCM (docs/payloads.md).
    public static let renderer: any PayloadRenderer = FCMRenderer()

    /// ``FCMAddressRules``: a registration token.
    public static func addressRules(_ configuration: FCMConfiguration?) -> any PushAddressRules { FCMAddressRules() }

    /// `herald fcm check`.
    public static let checkCommand = ProviderCheck(
        abstract: "Validate the FCM configuration and service account offline and print what would be used.",
        notConfigured: "FCM is not configured: set HERALD_FCM_SERVICE_ACCOUNT (or HERALD_FCM_SERVICE_ACCOUNT_JSON).")

    /// An ``FCMProvider`` on AsyncHTTPClient's event loops; logs the project it sends in.
    public static func makeProvider(_ configuration: FCMConfiguration, services: ProviderServices) throws -> FCMProvider {
        let provider = try FCMProvider(
            configuration: configuration, clock: services.clock, logger: services.logger, metrics: services.metrics)
        services.logger.info("FCM is configured", metadata: ["project": "\(provider.projectID)"])
        return provider
    }

    /// ``FCMConfiguration/check()``.
    public static func check(_ configuration: FCMConfiguration) throws -> [String] {
        try configuration.check()
    }
}
