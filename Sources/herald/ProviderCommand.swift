import ArgumentParser
import HeraldProviderKit
import HeraldServer

/// `herald <provider> …` (`herald apns check`, `herald fcm check`): one command per entry of the composition root's
/// ``providerCatalog``, worded by the provider's ``ProviderModule``.
struct ProviderCommand<Module: ProviderModule>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: Module.description.name, abstract: "\(Module.description.displayName) utilities.",
            subcommands: [Check.self])
    }

    /// `herald <provider> check`: validates the provider's configuration offline and prints what would be used.
    struct Check: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: "check", abstract: Module.checkCommand.abstract)
        }

        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
        var config: String?

        func run() async throws {
            let configuration = try loadConfiguration(file: config)
            let lines: [String]?
            do {
                lines = try providerCatalog.entry(of: Module.self)?.check(configuration)
            } catch {
                throw StartupFailure(error)
            }
            guard let lines else {
                print(Module.checkCommand.notConfigured)
                throw ExitCode(1)
            }
            for line in lines { print(line) }
        }
    }
}

extension ProviderModule {
    /// `herald <name> …` for this provider.
    static var command: any AsyncParsableCommand.Type { ProviderCommand<Self>.self }
}
