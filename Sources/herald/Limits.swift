import ArgumentParser
import HeraldCore
import HeraldServer
import HeraldStore

/// `herald limits set|clear`: per-USER_ID overrides of the daily limit, in the local store.
struct Limits: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change the daily notification limit of one USER_ID.", subcommands: [Set.self, Clear.self])

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a USER_ID its own daily limit.")
        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.") var config: String?
        @Argument(help: "The USER_ID (64 hex characters).") var userID: String
        @Argument(help: "Notifications per UTC day.") var limit: Int

        func run() async throws { try await changeLimit(limit, userID: userID, config: config) }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Return a USER_ID to HERALD_RATE_LIMIT_DAILY.")
        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.") var config: String?
        @Argument(help: "The USER_ID (64 hex characters).") var userID: String

        func run() async throws { try await changeLimit(nil, userID: userID, config: config) }
    }
}

private func changeLimit(_ limit: Int?, userID: String, config: String?) async throws {
    let configuration = try loadConfiguration(file: config)
    do {
        let store = try await StoreFactory.open(configuration.databaseURL)
        let line = try await DailyLimits.set(limit, forUserID: userID, in: store)
        try await store.close()
        print(line)
    } catch {
        throw StartupFailure(error)
    }
}
