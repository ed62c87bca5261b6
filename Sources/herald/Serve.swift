import ArgumentParser
import Foundation
import HeraldServer
import Hummingbird
import Logging

/// `herald serve`: runs the gateway until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the Herald server.")

    @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
    var config: String?

    func run() async throws {
        let configuration = try loadConfiguration(file: config)
        switch configuration.logFormat {
        case .text: LoggingSystem.bootstrap(StreamLogHandler.standardOutput)
        case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        }
        let app: any ApplicationProtocol
        do {
            app = try await buildApplication(configuration)
        } catch {
            throw StartupFailure(error)
        }
        try await app.runService()
    }
}

/// Loads the configuration or stops with the one line that names the option.
func loadConfiguration(file: String?) throws -> HeraldConfiguration {
    do {
        return try ConfigurationLoader.load(file: file, environment: ProcessInfo.processInfo.environment)
    } catch {
        throw StartupFailure(error)
    }
}

/// A startup problem printed as one line, exit status 1.
struct StartupFailure: Error, CustomStringConvertible {
    var description: String

    init(_ error: any Error) {
        description = "herald: " + startupMessage(error)
    }
}
