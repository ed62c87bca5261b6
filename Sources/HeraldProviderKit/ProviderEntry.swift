import HeraldCore
import Logging

/// One provider as a composition root wires it: its ``ProviderModule`` and where the application's configuration
/// (`Settings`) keeps the provider's settings. The server builds its providers from a list of entries and the CLI
/// generates one `herald <name> check` command per entry, so adding a provider adds one entry:
///
/// ```swift
/// public let providerCatalog: [ProviderEntry<HeraldConfiguration>] = [
///     ProviderEntry(APNsModule.self) { $0.apns },
///     ProviderEntry(FCMModule.self) { $0.fcm },
/// ]
/// ```
public struct ProviderEntry<Settings>: Sendable {
    /// The provider's module (the CLI makes its command from it).
    public let module: any ProviderModule.Type
    private let configured: @Sendable (Settings) -> Configured?
    private let rules: @Sendable (Settings) throws -> any PushAddressRules
    private let secrets: @Sendable (inout Settings, any ServerSettingStore, Logger) async throws -> Void

    private struct Configured {
        let make: (ProviderServices) throws -> any ClosablePushProvider
        let check: () throws -> [String]
    }

    /// An entry for `module`, whose settings `settings` finds in the application's configuration (`nil`: not
    /// configured).
    public init<Module: ProviderModule>(
        _ module: Module.Type, settings: @escaping @Sendable (Settings) -> Module.Configuration?
    ) {
        self.init(
            module, settings: settings, rules: { all in try Module.addressRules(settings(all)) }, secrets: { _, _, _ in })
    }

    private init<Module: ProviderModule>(
        _ module: Module.Type, settings: @escaping @Sendable (Settings) -> Module.Configuration?,
        rules: @escaping @Sendable (Settings) throws -> any PushAddressRules,
        secrets: @escaping @Sendable (inout Settings, any ServerSettingStore, Logger) async throws -> Void
    ) {
        self.module = module
        self.configured = { all in
            settings(all).map { configuration in
                Configured(
                    make: { services in try Module.makeProvider(configuration, services: services) },
                    check: { try Module.check(configuration) })
            }
        }
        self.rules = rules
        self.secrets = secrets
    }

    /// An entry for `module` whose settings are always at `keyPath` (with their secrets, which
    /// ``ProviderModule/prepareSecrets(_:settings:logger:)`` writes there at start-up); the provider is configured
    /// when `isConfigured` says so. Its registration rules read the settings either way.
    ///
    /// ```swift
    /// ProviderEntry(WebPushModule.self, at: \.webPush) { $0.subject != nil }
    /// ```
    public init<Module: ProviderModule>(
        _ module: Module.Type, at keyPath: any (WritableKeyPath<Settings, Module.Configuration> & Sendable),
        configuredWhen isConfigured: @escaping @Sendable (Module.Configuration) -> Bool
    ) {
        self.init(
            module,
            settings: { all in
                let configuration = all[keyPath: keyPath]
                return isConfigured(configuration) ? configuration : nil
            },
            rules: { all in try Module.addressRules(all[keyPath: keyPath]) },
            secrets: { all, store, logger in try await Module.prepareSecrets(&all[keyPath: keyPath], settings: store, logger: logger) })
    }

    /// Names, platform and limits.
    public var description: ProviderDescription { module.description }

    /// Whether `settings` configure the provider.
    public func isConfigured(in settings: Settings) -> Bool {
        configured(settings) != nil
    }

    /// What the server knows of the provider whether or not `settings` configure it: its description, renderer and
    /// registration rules.
    ///
    /// - Throws: a ``ProviderConfigurationFailure`` naming the option at fault.
    public func profile(_ settings: Settings) throws -> ProviderProfile {
        ProviderProfile(description: module.description, renderer: module.renderer, addressRules: try rules(settings))
    }

    /// Creates or loads the provider's server-held secrets into `settings` (``ProviderModule/prepareSecrets(_:settings:logger:)``).
    public func prepareSecrets(_ settings: inout Settings, store: any ServerSettingStore, logger: Logger) async throws {
        try await secrets(&settings, store, logger)
    }

    /// The provider, or `nil` when `settings` leave it out.
    ///
    /// - Throws: a ``ProviderConfigurationFailure`` naming the option at fault.
    public func makeProvider(_ settings: Settings, services: ProviderServices) throws -> (any ClosablePushProvider)? {
        try configured(settings)?.make(services)
    }

    /// `herald <name> check`'s lines, or `nil` when `settings` leave the provider out.
    ///
    /// - Throws: the first ``ProviderConfigurationFailure`` found.
    public func check(_ settings: Settings) throws -> [String]? {
        try configured(settings)?.check()
    }
}

extension Sequence {
    /// The entry of `module`, if the list has it.
    public func entry<Settings, Module: ProviderModule>(of module: Module.Type) -> ProviderEntry<Settings>?
    where Element == ProviderEntry<Settings> {
        first { ObjectIdentifier($0.module) == ObjectIdentifier(module) }
    }
}
