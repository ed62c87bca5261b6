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

    /// ``WebPushConfiguration/check()``.
    public static func check(_ configuration: WebPushConfiguration) throws -> [String] {
        try configuration.check()
    }
}
