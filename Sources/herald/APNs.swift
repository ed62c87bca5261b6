import ArgumentParser
import HeraldAPNs
import HeraldServer

/// `herald apns …`
struct APNs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns", abstract: "APNs utilities.", subcommands: [Check.self])

    /// `herald apns check`: validates the APNs configuration and key offline.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate the APNs configuration and key offline and print what would be used.")

        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
        var config: String?

        func run() async throws {
            let configuration = try loadConfiguration(file: config)
            guard let apns = configuration.apns else {
                print("APNs is not configured: set HERALD_APNS_KEY_PATH, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC.")
                throw ExitCode(1)
            }
            do {
                for line in try apns.check() { print(line) }
            } catch {
                throw StartupFailure(error)
            }
        }
    }
}
