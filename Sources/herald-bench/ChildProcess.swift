import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A server in a child process (`herald serve` or the bare baseline): its output is read as it comes, the port it
/// listens on is taken from Hummingbird's "Server started and listening on 127.0.0.1:PORT" line.
final class ChildProcess: Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    private struct Output {
        /// The last 64 KiB of output, for error messages.
        var tail = ""
        var port: Int?
        var listeningAt: ContinuousClock.Instant?
    }

    let name: String
    let startedAt: ContinuousClock.Instant
    private let process: Process
    private let output = Mutex(Output())

    /// Starts `executable arguments…` with exactly `environment`.
    init(name: String, executable: URL, arguments: [String], environment: [String: String]) throws {
        self.name = name
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        self.process = process
        startedAt = .now
        try process.run()
        // A thread of its own reads the output until EOF with plain read(2) (FileHandle's readabilityHandler
        // was seen to crash in libdispatch when the child went away).
        let reader = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            let descriptor = reader.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                received(String(decoding: buffer[0..<count], as: UTF8.self), at: .now)
            }
            try? reader.close()
        }
    }

    private func received(_ text: String, at now: ContinuousClock.Instant) {
        output.withLock { output in
            output.tail += text
            if output.port == nil, let range = output.tail.range(of: "Server started and listening on 127.0.0.1:") {
                let digits = output.tail[range.upperBound...].prefix(while: \.isNumber)
                if let port = Int(digits), digits.count < output.tail.distance(from: range.upperBound, to: output.tail.endIndex) {
                    output.port = port
                    output.listeningAt = now
                }
            }
            if output.tail.utf8.count > 65_536 { output.tail = String(output.tail.suffix(32_768)) }
        }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var log: String { output.withLock { $0.tail } }

    /// Waits for the "listening" line; returns the port and how long the process took to get there.
    func waitUntilListening(within seconds: Double = 120) async throws -> (port: Int, startup: Duration) {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let (port, at) = output.withLock({ output in output.port.map { ($0, output.listeningAt!) } }) {
                return (port, at - startedAt)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw StartFailure(description: "\(name) did not start listening; its output:\n\(log)")
    }

    func signal(_ signal: Int32) { _ = Glibc.kill(process.processIdentifier, signal) }

    /// Waits for the process to exit; returns its status, or `nil` after `seconds`.
    func waitForExit(within seconds: Double = 30) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return process.terminationStatus
    }

    /// SIGTERM (graceful shutdown), then SIGKILL if it has not exited within `seconds`.
    @discardableResult
    func stop(within seconds: Double = 30) async -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        signal(SIGTERM)
        if let status = await waitForExit(within: seconds) { return status }
        signal(SIGKILL)
        _ = await waitForExit(within: 10)
        return nil
    }
}

/// Resident memory and CPU time of a process, from /proc.
enum ProcessStats {
    /// VmRSS from /proc/PID/status, in bytes.
    static func residentBytes(of pid: Int32) -> Int? {
        statusField("VmRSS", pid: pid).map { $0 * 1_024 }
    }

    /// VmHWM (peak resident memory) from /proc/PID/status, in bytes.
    static func peakResidentBytes(of pid: Int32) -> Int? {
        statusField("VmHWM", pid: pid).map { $0 * 1_024 }
    }

    /// The number of threads, from /proc/PID/status.
    static func threads(of pid: Int32) -> Int? {
        statusField("Threads", pid: pid)
    }

    /// User plus system CPU time from /proc/PID/stat, in seconds (`pid` 0 for this process).
    static func cpuSeconds(of pid: Int32) -> Double? {
        let path = pid == 0 ? "/proc/self/stat" : "/proc/\(pid)/stat"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU time the whole machine spent busy (every field of /proc/stat's `cpu` line but idle and iowait), in seconds.
    static func machineBusySeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return nil }
        // user nice system idle iowait irq softirq steal (guest and guest_nice are already in user and nice)
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        guard ticks.count == 8 else { return nil }
        return (ticks.reduce(0, +) - ticks[3] - ticks[4]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private static func statusField(_ name: String, pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// Raises this process's open-file limit to its hard limit; returns (soft, hard) after the change.
    static func raiseOpenFileLimit() -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }
}

/// Samples a process's resident memory while a measurement runs and keeps the largest value.
final class MemorySampler: Sendable {
    private let peak = Mutex(0)
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(pid: Int32, every interval: Duration = .milliseconds(200)) {
        let sampling = Task { [self] in
            while !Task.isCancelled {
                if let rss = ProcessStats.residentBytes(of: pid) { peak.withLock { $0 = max($0, rss) } }
                try? await Task.sleep(for: interval)
            }
        }
        task.withLock { $0 = sampling }
    }

    /// Stops sampling; returns the largest resident size seen, in bytes.
    func stop() -> Int {
        task.withLock { $0?.cancel() }
        return peak.withLock { $0 }
    }
}
