import Foundation

/// The herald binary (release, built beside this one) and this executable (for `bare-server`).
struct Binaries: Sendable {
    var herald: URL
    var bench: URL
    var configuration: String

    /// `needsHerald`: false when only b2 runs (no Herald instance); then herald is neither built nor looked for.
    static func locate(build: Bool, needsHerald: Bool = true) throws -> Binaries {
        let bench = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        let folder = bench.deletingLastPathComponent()
        let configuration = folder.lastPathComponent  // "release" or "debug"
        if configuration != "release" {
            Progress.shared.line(
                "warning: herald-bench was built in \(configuration) mode; measure with `swift run -c release herald-bench`")
        }
        // HERALD_BENCH_HERALD: another build's herald (e.g. main's, to measure before and after a change in one run).
        let herald = ProcessInfo.processInfo.environment["HERALD_BENCH_HERALD"].map { URL(fileURLWithPath: $0) }
            ?? folder.appendingPathComponent("herald")
        // <scratch>/<triple>/<configuration>/herald-bench; the package is three levels above this file.
        let scratch = folder.deletingLastPathComponent().deletingLastPathComponent()
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        if build, needsHerald, ProcessInfo.processInfo.environment["HERALD_BENCH_HERALD"] == nil,
            FileManager.default.fileExists(atPath: package.appendingPathComponent("Package.swift").path) {
            Progress.shared.line("Building herald (\(configuration)) in \(scratch.path) …")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "swift", "build", "-c", configuration, "--product", "herald", "--package-path", package.path,
                "--scratch-path", scratch.path,
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw ChildProcess.StartFailure(
                    description: "swift build --product herald failed:\n\(String(decoding: output, as: UTF8.self))")
            }
        }
        guard !needsHerald || FileManager.default.isExecutableFile(atPath: herald.path) else {
            throw ChildProcess.StartFailure(
                description:
                    "no herald executable beside herald-bench in \(folder.path):"
                    + " run `swift build -c release --product herald` first"
            )
        }
        return Binaries(herald: herald, bench: bench, configuration: configuration)
    }
}
