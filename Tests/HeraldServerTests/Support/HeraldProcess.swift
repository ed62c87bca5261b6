import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A real `herald` child process (the binary built beside the tests), its output captured.
final class HeraldProcess: Sendable {
    private let process: Process
    private let output = OutputBuffer()

    final class OutputBuffer: Sendable {
        private let text = Mutex("")
        func append(_ more: String) { text.withLock { $0 += more } }
        var value: String { text.withLock { $0 } }
    }

    /// Starts `executable` (the built `herald` by default) in `directory` (the test's own by default). By default the
    /// child gets this process's environment without its HERALD_ variables (the test runner's, such as
    /// HERALD_TEST_POSTGRES_URL, are not options of `herald`).
    init(
        _ arguments: [String] = ["serve"], environment: [String: String] = HeraldProcess.inheritedEnvironment(),
        executable: URL? = nil, directory: URL? = nil
    ) throws {
        let process = Process()
        process.executableURL = try executable ?? Self.binary()
        process.currentDirectoryURL = directory
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        self.process = process
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            output.append(text)
        }
        try process.run()
    }

    /// A test that fails before it stops its server must not leave the process running.
    deinit {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// This process's environment without its HERALD_ variables, plus `options`.
    static func inheritedEnvironment(_ options: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }.merging(options) { _, new in new }
    }

    /// `herald serve` options for a throwaway server on a free loopback port (in-memory store), plus `options`.
    static func serveEnvironment(_ options: [String: String] = [:]) -> [String: String] {
        inheritedEnvironment(["HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_DATABASE_URL": "memory:"].merging(options) { _, new in new })
    }

    /// The port from Hummingbird's "Server started and listening on HOST:PORT" line.
    func port() async throws -> Int {
        for _ in 0..<600 {
            let log = output.value
            if let range = log.range(of: "Server started and listening on 127.0.0.1:") {
                let digits = log[range.upperBound...].prefix(while: \.isNumber)
                if let port = Int(digits) { return port }
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessError(log: output.value)
    }

    var log: String { output.value }

    /// Runs `herald <arguments>` to completion; returns its exit status and everything it printed.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = try HeraldProcess(arguments)
        let status = await process.waitForExit()
        try? await Task.sleep(for: .milliseconds(50))  // let the pipe drain
        return (status, process.log)
    }

    /// Waits until the output contains `text` (at most about `seconds`); returns whether it did.
    func waitForOutput(containing text: String, within seconds: Double = 15) async -> Bool {
        for _ in 0..<Int(seconds * 50) {
            if output.value.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    func kill(_ signal: Int32) { _ = Glibc.kill(process.processIdentifier, signal) }

    func waitForExit() async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        return process.terminationStatus
    }

    struct ProcessError: Error, CustomStringConvertible {
        var log: String
        var description: String { "herald serve did not start:\n\(log)" }
    }

    /// The `herald` executable next to the test bundle; built with `swift build --product herald` if it is missing.
    static func binary() throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bundle.appendingPathComponent("herald"), bundle.deletingLastPathComponent().appendingPathComponent("herald")]
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) { return found }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = ["swift", "build", "--product", "herald", "--package-path", root.path]
        try build.run()
        build.waitUntilExit()
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ProcessError(log: "no herald executable in \(bundle.path)")
        }
        return found
    }
}

