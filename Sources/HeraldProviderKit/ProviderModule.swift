import CoreMetrics
import HeraldCore
import Logging

/// A provider module's one public face: what the provider is, how it is built from its configuration, and how
/// `herald <name> check` checks that configuration offline. HeraldAPNs publishes ``ProviderModule``s `APNsModule`,
/// HeraldFCM `FCMModule`; the composition root lists them as ``ProviderEntry``s.
///
/// ```swift
/// public enum WebPushModule: ProviderModule {
///     public static let description = ProviderDescription(name: "webpush", displayName: "Web Push", …)
///     public static let checkCommand = ProviderCheck(…)
///     public static func makeProvider(_ configuration: WebPushConfiguration, services: ProviderServices) throws -> WebPushProvider { … }
///     public static func check(_ configuration: WebPushConfiguration) throws -> [String] { … }
/// }
/// ```
public protocol ProviderModule: Sendable {
    /// The provider's settings (a plain value the server's configuration holds).
    associatedtype Configuration: Sendable
    /// The provider the module builds.
    associatedtype Provider: ClosablePushProvider

    /// Names, platform and limits.
    static var description: ProviderDescription { get }
    /// Turns a notification's content into this provider's payload (its size limit, where its body is shortened).
    static var renderer: any PayloadRenderer { get }
    /// The wording of `herald <name> check`.
    static var checkCommand: ProviderCheck { get }
    /// Loads keys and certificates and prepares (without opening) the provider's connections.
    ///
    /// - Throws: a ``ProviderConfigurationFailure`` naming the option at fault.
    static func makeProvider(_ configuration: Configuration, services: ProviderServices) throws -> Provider
    /// Validates the configuration offline and describes what the provider would use, one line per setting; never key
    /// material.
    ///
    /// - Throws: the first ``ProviderConfigurationFailure`` found.
    static func check(_ configuration: Configuration) throws -> [String]
    /// The rules of the address a registration names for this provider (``PushAddressRules``). `configuration` is the
    /// provider's settings, `nil` when the server has none: a provider that is not configured still takes
    /// registrations (its notifications wait). By default ``TokenAddressRules``.
    ///
    /// - Throws: a ``ProviderConfigurationFailure`` naming the option at fault.
    static func addressRules(_ configuration: Configuration?) throws -> any PushAddressRules
    /// Creates or loads the secrets the server holds for this provider (Web Push's VAPID key) at start-up, before the
    /// provider is built, and writes them into `configuration`; `settings` keeps a generated one, so that every
    /// instance and every restart use the same. By default nothing.
    ///
    /// - Throws: a ``ProviderConfigurationFailure`` or the store's error when a secret the provider needs cannot be had.
    static func prepareSecrets(_ configuration: inout Configuration, settings: any ServerSettingStore, logger: Logger) async throws
}

extension ProviderModule {
    public static func addressRules(_ configuration: Configuration?) throws -> any PushAddressRules {
        TokenAddressRules(platform: description.platform)
    }

    public static func prepareSecrets(_ configuration: inout Configuration, settings: any ServerSettingStore, logger: Logger) async throws {}
}

/// A ``PushProvider`` whose connections are closed when the server stops.
public protocol ClosablePushProvider: PushProvider {
    /// Closes the connections; sends after this return a retry.
    func shutdown() async throws
}

/// What a provider is, for the composition root, the CLI, the logs and the dialects that need its limits.
public struct ProviderDescription: Sendable, Equatable {
    /// `apns`: the `provider` label of ``ProviderMetrics`` and the CLI's command (`herald apns check`).
    public var name: String
    /// `APNs`: how logs and messages name it.
    public var displayName: String
    /// The devices it reaches.
    public var platform: Platform
    /// What authorises its requests, as logs name it: `provider token`, `access token`.
    public var credentialName: String
    /// Logged at start when the server's configuration leaves the provider out, e.g. `APNs is not configured
    /// (HERALD_APNS_KEY_PATH etc.): notifications for Apple devices stay queued`.
    public var notConfiguredNotice: String
    /// The provider's documented limits.
    public var limits: ProviderLimits
    /// The member that repeats the provider's id of a sent notification under the provider's own name in
    /// `GET /notifications/{id}` (APNs: `apns_id`, besides `provider_message_id`); `nil` for none.
    public var messageIDField: String?
    /// Whether the provider's tokens belong to an environment (APNs' production and sandbox), which the dashboard shows.
    public var hasEnvironments: Bool

    /// Creates a description.
    public init(
        name: String, displayName: String, platform: Platform, credentialName: String, notConfiguredNotice: String,
        limits: ProviderLimits = ProviderLimits(), messageIDField: String? = nil, hasEnvironments: Bool = false
    ) {
        self.name = name
        self.displayName = displayName
        self.platform = platform
        self.credentialName = credentialName
        self.notConfiguredNotice = notConfiguredNotice
        self.limits = limits
        self.messageIDField = messageIDField
        self.hasEnvironments = hasEnvironments
    }

    /// The display name as messages say "the provider's": `APNs'`, `FCM's`, `Web Push's`.
    public var possessiveName: String { displayName.hasSuffix("s") ? "\(displayName)'" : "\(displayName)'s" }
}

/// A provider's documented limits, published so that a dialect can check a request against them without reaching
/// into the provider's module. (The payload size limit lives with each provider's renderer.)
public struct ProviderLimits: Sendable, Equatable {
    /// The longest time to live, in seconds, the provider takes (FCM: four weeks); `nil` when it documents none.
    public var maximumTimeToLive: Int?

    /// Creates limits; `nil` for a limit the provider does not document.
    public init(maximumTimeToLive: Int? = nil) {
        self.maximumTimeToLive = maximumTimeToLive
    }
}

/// The wording of a provider's `herald <name> check` command; the CLI generates the command from it.
public struct ProviderCheck: Sendable, Equatable {
    /// The check's help line, e.g. `Validate the APNs configuration and key offline and print what would be used.`
    public var abstract: String
    /// Printed (exit status 1) when the configuration leaves the provider out, e.g. `APNs is not configured: set
    /// HERALD_APNS_KEY_PATH, …`.
    public var notConfigured: String

    /// Creates the wording.
    public init(abstract: String, notConfigured: String) {
        self.abstract = abstract
        self.notConfigured = notConfigured
    }
}

/// What the composition root hands every provider it builds.
public struct ProviderServices: Sendable {
    /// The time for credentials' ages and expiry.
    public var clock: any WallClock
    /// Where requests and connection trouble are logged (never full device tokens or credentials).
    public var logger: Logger
    /// Where request latencies and answers are counted (``ProviderMetrics``).
    public var metrics: any MetricsFactory

    /// Creates the services; swift-metrics' global factory by default.
    public init(clock: any WallClock = SystemClock(), logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory) {
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }
}
