import Foundation
import Subprocess
import SystemPackage
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `herald` child process (the binary built beside the tests), its output captured.
///
/// The child's standard output and error are read until they end, whatever the test is doing meanwhile, so a child
/// never blocks on a full pipe; every wait for its exit has a deadline, past which the test fails with the end of
/// the child's log and the child is killed (``waitForExit(within:sourceLocation:)``).
///
/// Started with swift-subprocess, not Foundation's `Process`: on Linux, `Process.run()` reads `/proc/self/fd` with a
/// 256-byte over-read that crashes the test process once it holds about 1,400 descriptors, which a parallel test run
/// does (swift-corelibs-foundation#5472).
final class HeraldProcess: Sendable {
    private let identifier: pid_t
    private let output: OutputBuffer
    private let runner: Task<Int32, Never>

    final class OutputBuffer: Sendable {
        private let bytes = Mutex<[UInt8]>([])
        private let reaped = Mutex(false)
        func append(_ more: UnsafeRawBufferPointer) { bytes.withLock { $0.append(contentsOf: more) } }
        var value: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
        /// Set once the child has been waited for: its process ID may belong to another process from then on.
        var ended: Bool {
            get { reaped.withLock { $0 } }
            set { reaped.withLock { $0 = newValue } }
        }
    }

    /// Starts `executable` (the built `herald` by default) in `directory` (the test's own by default). By default the
    /// child gets this process's environment without its HERALD_ variables (the test runner's, such as
    /// HERALD_TEST_POSTGRES_URL, are not options of `herald`).
    init(
        _ arguments: [String] = ["serve"], environment: [String: String] = HeraldProcess.inheritedEnvironment(),
        executable: URL? = nil, directory: URL? = nil
    ) async throws {
        let path: URL
        if let executable { path = executable } else { path = try await Self.binary() }
        let output = OutputBuffer()
        let (started, starting) = AsyncStream.makeStream(of: Result<pid_t, any Error>.self)
        let variables = Dictionary(uniqueKeysWithValues: environment.compactMap { key, value in
            Environment.Key(rawValue: key).map { ($0, value) }
        })
        runner = Task {
            defer { output.ended = true }
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(path.path)), arguments: Arguments(arguments), environment: .custom(variables),
                    workingDirectory: directory.map { FilePath($0.path) }, input: .none, output: .sequence,
                    error: .combinedWithOutput
                ) { execution in
                    starting.yield(.success(execution.processIdentifier.value))
                    for try await chunk in execution.standardOutput { chunk.withUnsafeBytes { output.append($0) } }
                }
                switch result.terminationStatus {
                case .exited(let code): return code
                case .signaled(let signal): return 128 + signal  // as a shell reports it
                }
            } catch {
                starting.yield(.failure(error))
                return -1
            }
        }
        var first: Result<pid_t, any Error>?
        for await event in started {
            first = event
            break
        }
        self.output = output
        self.identifier = try first?.get() ?? -1
    }

    /// A test that fails before it stops its server must not leave the process running.
    deinit {
        if !output.ended { kill(SIGKILL) }
    }

    /// This process's environment without its HERALD_ variables, plus `options`.
    static func inheritedEnvironment(_ options: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }.merging(options) { _, new in new }
    }

    /// `herald serve` options for a throwaway server on a free loopback port (in-memory store), plus `options`.
    static func serveEnvironment(_ options: [String: String] = [:]) -> [String: String] {
        inheritedEnvironment(["HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_DATABASE_URL": "memory:"].merging(options) { _, new in new })
    }

    /// The process id (its descriptors are in `/proc/PID/fd`).
    var processID: pid_t { identifier }

    /// The port from Hummingbird's "Server started and listening on HOST:PORT" line.
    func port() async throws -> Int {
        for _ in 0..<600 {
            let log = output.value
            if let range = log.range(of: "Server started and listening on 127.0.0.1:") {
                let digits = log[range.upperBound...].prefix(while: \.isNumber)
                if let port = Int(digits) { return port }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessError(log: output.value)
    }

    var log: String { output.value }

    /// Runs `herald <arguments>` to completion; returns its exit status and everything it printed.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = try await HeraldProcess(arguments)
        let status = await process.waitForExit()
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

    /// Sends `signal`, unless the child has been waited for (its process ID may belong to another process by then).
    func kill(_ signal: Int32) {
        if identifier > 0, !output.ended { _ = Glibc.kill(identifier, signal) }
    }

    /// The exit status once the process has ended and its output is read (128 + N after signal N).
    ///
    /// Past `deadline` the test fails with the end of the child's log, the child is killed (SIGKILL) and its status is
    /// returned once it is reaped (137), or -1 if even that does not come within 10 s: a test never hangs on a child.
    func waitForExit(
        within deadline: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Int32 {
        if let status = await exitStatus(within: deadline) { return status }
        Issue.record(
            """
            The child process \(processID) (\(kernelState)) did not exit within \(deadline), or its output did not end; \
            killed. The end of its log:
            \(log.suffix(8_000))
            """,
            sourceLocation: sourceLocation)
        kill(SIGKILL)
        return await exitStatus(within: .seconds(10)) ?? -1
    }

    /// The `State:` line of `/proc/PID/status`: `Z (zombie)` when the child has ended but something else still holds
    /// its output pipe open, `S (sleeping)` when it is alive and waiting.
    private var kernelState: String {
        let status = (try? String(contentsOfFile: "/proc/\(processID)/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("State:") }.map(String.init) ?? "State: gone"
    }

    /// The exit status if the process ends (and its output is read) within `deadline`. Polled: awaiting
    /// `runner.value` cannot be cancelled, so a task group racing it against a timer would wait for it all the same.
    private func exitStatus(within deadline: Duration) async -> Int32? {
        let end = ContinuousClock.now + deadline
        while !output.ended {
            guard ContinuousClock.now < end else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await runner.value
    }

    struct ProcessError: Error, CustomStringConvertible {
        var log: String
        var description: String { "herald serve did not start:\n\(log)" }
    }

    /// The `herald` executable next to the test bundle; built with `swift build --product herald` if it is missing.
    static func binary() async throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bundle.appendingPathComponent("herald"), bundle.deletingLastPathComponent().appendingPathComponent("herald")]
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) { return found }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        _ = try await Subprocess.run(
            .path("/usr/bin/env"), arguments: ["swift", "build", "--product", "herald", "--package-path", root.path],
            output: .discarded, error: .discarded)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ProcessError(log: "no herald executable in \(bundle.path)")
        }
        return found
    }
}

