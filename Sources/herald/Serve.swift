import ArgumentParser
import Foundation
import HeraldServer
import HeraldTransport
import Hummingbird
import Logging

/// `herald serve`: runs the gateway until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the Herald server.")

    @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
    var config: String?

    func run() async throws {
        let configuration = try loadConfiguration(file: config)
        Self.readTimeZoneOnce()
        switch configuration.logFormat {
        case .text: LoggingSystem.bootstrap { label in StreamLogHandler(label: label, stream: LogLineWriter.standardOutput.stream) }
        case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        }
        defer { LogLineWriter.standardOutput.flush() }
        let app: any ApplicationProtocol
        do {
            app = try await buildApplication(configuration)
        } catch {
            throw StartupFailure(error)
        }
        try await app.runService()
    }

    /// The text log's timestamps come from the C library's `strftime`, which calls `tzset()`, and without `TZ`
    /// glibc then checks `/etc/localtime` with a `stat` on every call: a system call on every access-log line.
    /// `TZ=:/etc/localtime` (when `TZ` is not set) reads the file once; the local time zone stays the host's, but
    /// a change of the host's zone is seen at the next start (docs/operations.md, "Logs").
    static func readTimeZoneOnce() {
        setenv("TZ", ":/etc/localtime", 0)
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
