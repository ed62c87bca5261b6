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

    private struct Configured {
        let make: (ProviderServices) throws -> any ClosablePushProvider
        let check: () throws -> [String]
    }

    /// An entry for `module`, whose settings `settings` finds in the application's configuration (`nil`: not
    /// configured).
    public init<Module: ProviderModule>(
        _ module: Module.Type, settings: @escaping @Sendable (Settings) -> Module.Configuration?
    ) {
        self.module = module
        self.configured = { all in
            settings(all).map { configuration in
                Configured(
                    make: { services in try Module.makeProvider(configuration, services: services) },
                    check: { try Module.check(configuration) })
            }
        }
    }

    /// Names, platform and limits.
    public var description: ProviderDescription { module.description }

    /// Whether `settings` configure the provider.
    public func isConfigured(in settings: Settings) -> Bool {
        configured(settings) != nil
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
