import HeraldCore
import HeraldProviderKit
import Logging

/// The Web Push provider as the composition root and the CLI see it (``ProviderModule``): its description, how it is
/// built, and `herald webpush check`.
public enum WebPushModule: ProviderModule {
    /// `webpush`, for browsers' push subscriptions.
    public static let description = ProviderDescription(
        name: "webpush", displayName: "Web Push", platform: .webpush, credentialName: "VAPID token",
        notConfiguredNotice: "Web Push is not configured (HERALD_VAPID_SUBJECT): notifications for Web Push devices stay queued")

    /// The JSON document a service worker receives (docs/payloads.md).
    public static let renderer: any PayloadRenderer = WebPushRenderer()

    /// `herald webpush check`.
    public static let checkCommand = ProviderCheck(
        abstract: "Validate the Web Push configuration (VAPID subject and key, allowed hosts) offline and print what would be used.",
        notConfigured: "Web Push is not configured: set HERALD_VAPID_SUBJECT (a mailto: address or an https: URL).")

    /// A ``WebPushProvider`` on AsyncHTTPClient's event loops; logs its public key.
    public static func makeProvider(_ configuration: WebPushConfiguration, services: ProviderServices) throws -> WebPushProvider {
        let provider = try WebPushProvider(
            configuration: configuration, clock: services.clock, logger: services.logger, metrics: services.metrics)
        services.logger.info(
            "Web Push is configured", metadata: ["subject": "\(provider.signer.subject)", "public_key": "\(provider.signer.publicKey)"])
        return provider
    }

    /// ``WebPushAddressRules``: a subscription whose endpoint the configured egress policy allows
    /// (`HERALD_WEBPUSH_ALLOWED_HOSTS`), also while Web Push is not configured.
    public static func addressRules(_ configuration: WebPushConfiguration?) throws -> any PushAddressRules {
        WebPushAddressRules(policy: try (configuration ?? WebPushConfiguration()).egressPolicy())
    }

    /// The setting a generated VAPID key is kept under (base64url of the raw P-256 scalar).
    public static let vapidKeySetting = "webpush.vapid_private_key"

    /// The VAPID key: `HERALD_VAPID_PRIVATE_KEY` when given, otherwise the key generated on first start and kept in the
    /// store's settings, so that subscriptions survive restarts and every instance on one PostgreSQL database signs
    /// with the same key (the first to start keeps it, the others read it). Without a store that keeps it, Web Push is
    /// not available: an error when it is configured (`HERALD_VAPID_SUBJECT`), a warning otherwise.
    public static func prepareSecrets(
        _ configuration: inout WebPushConfiguration, settings: any ServerSettingStore, logger: Logger
    ) async throws {
        guard configuration.vapidPrivateKey == nil else { return }
        let generated = VAPIDKey.generate()
        do {
            let kept = try await settings.setting(named: vapidKeySetting, insertingIfAbsent: generated)
            if kept == generated { logger.notice("Web Push: generated a VAPID key and kept it in the database") }
            configuration.vapidPrivateKey = kept
        } catch {
            guard configuration.subject == nil else {
                throw WebPushConfigurationError(.privateKey, "not set, and the generated key cannot be kept in the database: \(error)")
            }
            logger.warning("Web Push: no VAPID key (the database cannot keep one)", metadata: ["error": "\(error)"])
        }
    }

    /// ``WebPushConfiguration/check()``.
    public static func check(_ configuration: WebPushConfiguration) throws -> [String] {
        try configuration.check()
    }
}
