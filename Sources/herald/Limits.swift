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

private func changeLimit(_ limit: Int?, userID text: String, config: String?) async throws {
    let configuration = try loadConfiguration(file: config)
    guard let userID = UserID(text) else { throw LimitsCommandFailure("herald: USER_ID must be 64 hexadecimal characters") }
    let store: any HeraldStore
    do {
        store = try await StoreFactory.open(configuration.databaseURL)
    } catch {
        throw StartupFailure(error)
    }
    let outcome: Result<Void, DailyLimitError>
    do throws(DailyLimitError) {
        try await DailyLimits.set(limit, for: userID, in: store)
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    try? await store.close()
    do {
        try outcome.get()
    } catch {
        throw LimitsCommandFailure("herald: \(error)")
    }
    print(limit.map { "Daily limit of this USER_ID set to \($0)." } ?? "Daily limit of this USER_ID reset to the default.")
}

/// A refusal printed as one line, exit status 1.
private struct LimitsCommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
