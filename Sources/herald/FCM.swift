import ArgumentParser
import HeraldFCM
import HeraldServer

/// `herald fcm …`
struct FCM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm", abstract: "FCM utilities.", subcommands: [Check.self])

    /// `herald fcm check`: validates the FCM configuration and service account offline.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate the FCM configuration and service account offline and print what would be used.")

        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
        var config: String?

        func run() async throws {
            let configuration = try loadConfiguration(file: config)
            guard let fcm = configuration.fcm else {
                print("FCM is not configured: set HERALD_FCM_SERVICE_ACCOUNT (or HERALD_FCM_SERVICE_ACCOUNT_JSON).")
                throw ExitCode(1)
            }
            do {
                for line in try fcm.check() { print(line) }
            } catch {
                throw StartupFailure(error)
            }
        }
    }
}
