import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP load generator of every scenario that sends `/api/push/notify`: `wrk` 4 (C, epoll, one event loop per
/// thread), so that the generator is faster than the servers it measures and a Swift client's own limit cannot hide
/// the gap between Herald and the bare stack. The benchmark refuses to run without it.
///
/// Each load is a Lua script the benchmark writes into its temporary folder (``WrkScript``): it cycles through a file
/// of request bodies, one per line, counts the 2xx and the other answers, can keep the notification ids Herald
/// answered with, can stop after a number of 2xx, can pace its connections to a fixed rate (open loop, scenario 2),
/// and prints its totals as one JSON line that ``WrkResult`` decodes. wrk runs as a child process (``WrkProcess``),
/// reaped with its own CPU time.
struct Wrk: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// How the benchmark asks for wrk when it is missing.
    static let installHint =
        "herald-bench drives its HTTP load with wrk (4.1), which is not on PATH."
        + " Install it: `sudo apt-get install wrk` (Debian, Ubuntu), `brew install wrk` (macOS),"
        + " or build it from https://github.com/wg/wrk and put it on PATH."

    /// The `wrk` executable.
    let executable: URL
    /// Where the scripts, body files and id files go (inside the benchmark's temporary folder).
    let directory: URL
    /// Threads of each wrk run (`-t`); each thread has its own event loop and share of the connections.
    let threads: Int
    /// Per-request deadline (`--timeout`); wrk allocates its latency histogram up to it, so it stays modest.
    let timeout = Duration.seconds(10)

    /// Finds `wrk` on PATH; throws ``installHint`` when it is not there.
    static func locate(directory: URL, threads: Int) throws -> Wrk {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent("wrk")
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                return Wrk(executable: candidate, directory: directory, threads: threads)
            }
        }
        throw Failure(description: installHint)
    }

    /// `wrk --version`, for the report.
    func version() -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        guard (try? process.run()) != nil else { return "wrk (unknown version)" }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self).split(separator: "\n").first.map {
            $0.replacingOccurrences(of: "Copyright (C) 2012 Will Glozer", with: "").trimmingCharacters(in: .whitespaces)
        } ?? "wrk"
    }

    /// Writes `bodies` (one JSON document per line) and a script that sends them as `POST path` in turn.
    ///
    /// Without a `rate`, each connection sends its next request as soon as the previous one was answered (closed loop).
    /// With one, the connections send `rate` requests per second in all, each on a fixed schedule (open loop; see
    /// ``WrkScript``); each connection then has a wrk thread of its own, so that the thread's Lua state knows which
    /// request an answer belongs to, and `keepIDs` also keeps each 2xx's scheduled, actual send and answer times.
    /// `threads` replaces ``threads`` for a closed loop (several wrk processes at once share the threads out).
    func load(
        _ name: String, path: String, bodies: [ByteBuffer], connections: Int, keepIDs: Bool = false,
        stopAfter quota: Int? = nil, rate: Double? = nil, threads: Int? = nil, method: String = "POST", addressedLines: Bool = false
    ) throws -> WrkLoad {
        precondition(rate.map { $0 > 0 } ?? true, "a fixed rate must be positive")
        precondition(!addressedLines || rate == nil, "addressed lines are for closed loops")
        let bodiesFile = directory.appendingPathComponent("\(name).bodies")
        // A paced load's connections share the bodies out (``WrkScript``): at least one each.
        let lines =
            rate == nil || bodies.isEmpty ? bodies : (0..<max(bodies.count, connections)).map { bodies[$0 % bodies.count] }
        var text = ""
        text.reserveCapacity(lines.reduce(0) { $0 + $1.readableBytes + 1 })
        for body in lines {
            let line = String(buffer: body)
            precondition(!line.contains("\n"), "a request body must fit on one line")
            text += line + "\n"
        }
        try text.write(to: bodiesFile, atomically: true, encoding: .utf8)
        let load = WrkLoad(
            name: name, path: path, bodiesFile: bodiesFile, connections: connections,
            // A thread with no share of the quota would never stop: at most one thread per request of the quota.
            threads: rate == nil ? max(1, min(threads ?? self.threads, connections, quota ?? .max)) : connections,
            keepIDs: keepIDs,
            quota: quota, rate: rate, directory: directory, method: method, addressedLines: addressedLines)
        try WrkScript.text(for: load).write(to: load.scriptFile, atomically: true, encoding: .utf8)
        return load
    }

    /// Runs `load` against `127.0.0.1:port` for `duration` (whole seconds, at least one). The `observers` see the window
    /// from just before wrk starts to just after it exits. With a quota, wrk is interrupted (SIGINT: it then reports
    /// as usual) once every thread has reached its share, or at the end of `duration`, whichever comes first.
    func run(
        _ load: WrkLoad, port: Int, duration: Duration, label: String, observers: [any WindowObserver] = []
    ) async throws -> WrkResult {
        let seconds = max(1, Int(duration.seconds.rounded(.up)))
        try load.removeRunFiles()
        let arguments = [
            "-t\(load.threads)", "-c\(load.connections)", "-d\(seconds)s", "--timeout", "\(Int(timeout.seconds))s",
            "-s", load.scriptFile.path, "http://127.0.0.1:\(port)\(load.path)",
        ]
        let clock = ContinuousClock()
        for observer in observers { observer.windowStarted() }
        let started = clock.now
        let process = try WrkProcess(executable: executable, arguments: arguments)
        let finished = SharedFlag()
        let monitor = Task {
            var lastStatus = clock.now
            var interrupted = false
            while !finished.value.load(ordering: .relaxed) {
                try? await Task.sleep(for: .milliseconds(50))
                if load.quota != nil, !interrupted, load.quotaReached() {
                    process.signal(SIGINT)
                    interrupted = true
                }
                if clock.now - lastStatus >= .seconds(1) {
                    lastStatus = clock.now
                    Progress.shared.status(
                        "\(label): wrk \(String(format: "%.0f", (clock.now - started).seconds)) s of \(seconds) s"
                            + observers.compactMap(\.progress).map { ", " + $0 }.joined())
                }
            }
        }
        let exit = await process.waitForExit()
        let ended = clock.now
        for observer in observers { observer.windowEnded() }
        finished.value.store(true, ordering: .relaxed)
        _ = await monitor.value
        Progress.shared.endStatus()

        guard let line = exit.output.split(separator: "\n").last(where: { $0.hasPrefix(WrkScript.marker) }),
            var result = try? JSONDecoder().decode(
                WrkResult.self, from: Data(line.dropFirst(WrkScript.marker.count).utf8))
        else {
            throw Failure(
                description: "wrk (\(label)) exited with status \(exit.status) without its totals;"
                    + " its output:\n\(exit.output.suffix(4_000))")
        }
        result.window = ended - started
        result.cpuSeconds = exit.cpuSeconds
        if load.keepIDs {
            if load.rate == nil {
                result.ids = try load.readIDs()
            } else {
                result.sends = try load.readSends()
                result.ids = result.sends.map(\.id)
            }
        }
        return result
    }

    /// A warm-up run (not measured: nobody observes it), then the measured run.
    func run(
        _ load: WrkLoad, port: Int, warmup: Duration, duration: Duration, label: String,
        observers: [any WindowObserver] = []
    ) async throws -> (warmup: WrkResult?, measured: WrkResult) {
        let warm = warmup > .zero ? try await run(load, port: port, duration: warmup, label: "\(label) (warm-up)") : nil
        let measured = try await run(load, port: port, duration: duration, label: label, observers: observers)
        return (warm, measured)
    }
}

/// One load for wrk: its script, its body file and where its threads write what the Swift side reads back.
struct WrkLoad: Sendable {
    var name: String
    /// The request path, e.g. `/api/push/notify`.
    var path: String
    var bodiesFile: URL
    var connections: Int
    var threads: Int
    /// Whether each thread writes the `"id"` of every 2xx answer to a file (Herald's notification ids).
    var keepIDs: Bool
    /// Stop after this many 2xx in all (each thread stops at its share), or `nil` to run for the whole duration.
    var quota: Int?
    /// Requests per second in all, each connection (one per thread) on a fixed schedule, or `nil` for a closed loop.
    var rate: Double?
    var directory: URL
    /// The requests' method (`POST` unless set).
    var method = "POST"
    /// Whether each body line is `path<TAB>authorization<TAB>body` (a closed loop over many paths and credentials,
    /// scenario 9's PATCHes) instead of a body for `path`.
    var addressedLines = false

    var scriptFile: URL { directory.appendingPathComponent("\(name).lua") }

    /// Thread `index`'s file of notification ids (one 2xx per line) is this path followed by `index`. A paced load
    /// writes one file, index 0, for all its threads when wrk is done: the id, the connection, the request's scheduled
    /// send, actual send and answer times.
    var idsPrefix: String { directory.appendingPathComponent("\(name).ids.").path }

    /// The file thread `index` creates when it has reached its share of the quota: this path followed by `index`.
    var quotaPrefix: String { directory.appendingPathComponent("\(name).quota.").path }

    func idsFile(_ index: Int) -> URL { URL(fileURLWithPath: idsPrefix + String(index)) }
    func quotaFile(_ index: Int) -> URL { URL(fileURLWithPath: quotaPrefix + String(index)) }

    /// Thread `index`'s share of the quota (the first threads take the remainder).
    func share(of quota: Int, thread index: Int) -> Int {
        quota / threads + (index < quota % threads ? 1 : 0)
    }

    func quotaReached() -> Bool {
        (0..<threads).allSatisfy { FileManager.default.fileExists(atPath: quotaFile($0).path) }
    }

    func removeRunFiles() throws {
        for index in 0..<threads {
            for file in [idsFile(index), quotaFile(index)] where FileManager.default.fileExists(atPath: file.path) {
                try FileManager.default.removeItem(at: file)
            }
        }
    }

    /// The ids the threads wrote (wrk flushes the files when it exits).
    func readIDs() throws -> [String] {
        try idLines().map { String($0.prefix { $0 != " " }) }
    }

    /// The 2xx answers of a paced load, with their times.
    func readSends() throws -> [WrkSend] {
        try idLines().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 5, let connection = Int(fields[1]), let due = Double(fields[2]),
                let sent = Double(fields[3]), let answered = Double(fields[4])
            else { return nil }
            return WrkSend(id: String(fields[0]), connection: connection, due: due, sent: sent, answered: answered)
        }
    }

    private func idLines() throws -> [Substring] {
        var lines: [Substring] = []
        for index in 0..<threads where FileManager.default.fileExists(atPath: idsFile(index).path) {
            let text = try String(contentsOf: idsFile(index), encoding: .utf8)
            lines += text.split(separator: "\n")
        }
        return lines
    }
}

/// One 2xx answer of a paced load; times in microseconds of ``ScriptClock``.
struct WrkSend: Sendable {
    /// The notification id Herald answered with.
    var id: String
    /// The connection (= wrk thread) that sent it, from 0.
    var connection: Int
    /// When the connection's schedule said to send it.
    var due: Double
    /// When `request()` handed it to wrk, which wrote it at once.
    var sent: Double
    /// When `response()` saw the answer.
    var answered: Double
}

/// The clock of the times a paced script writes: `CLOCK_MONOTONIC`, which the script reads through LuaJIT's FFI (wrk's
/// Lua has no clock of its own finer than `os.time()`'s second), in microseconds.
enum ScriptClock {
    /// The `clockid_t` the script passes to `clock_gettime`.
    static let id = Int(CLOCK_MONOTONIC)

    /// Foundation's `systemUptime` is `CLOCK_MONOTONIC` on Linux (and saves naming `timespec`'s fields, which
    /// `MemberImportVisibility` refuses in some builds: see ``WrkProcess``).
    static func now() -> Double {
        ProcessInfo.processInfo.systemUptime * 1_000_000
    }

    /// `ContinuousClock` instants (the APNs double's answer times) on this clock, from one reading of both.
    struct Converter {
        private let instant: ContinuousClock.Instant
        private let microseconds: Double

        init() {
            let before = ContinuousClock.now
            microseconds = ScriptClock.now()
            let after = ContinuousClock.now
            instant = before + (after - before) / 2
        }

        func microseconds(at other: ContinuousClock.Instant) -> Double {
            microseconds + (other - instant).seconds * 1_000_000
        }
    }
}

/// What one wrk run reports: the script's JSON line, plus the window and ids the Swift side adds.
struct WrkResult: Sendable, Decodable {
    /// Answers received (complete responses, any status).
    var requests: Int
    /// 2xx answers.
    var succeeded: Int
    /// Answers with another status.
    var otherStatus: Int
    /// Socket errors as wrk counts them (a "timeout" is an answer slower than `--timeout`).
    var connectErrors: Int
    var readErrors: Int
    var writeErrors: Int
    var timeouts: Int
    /// wrk's own run time (from its threads' start to their end), microseconds.
    var durationMicroseconds: Double
    /// Latency percentiles from wrk's histogram, from each request's actual send (wrk 4 adds its coordinated-omission
    /// correction: for an answer slower than twice the mean interval between two sends on a connection, samples at
    /// that latency less one, two… intervals), µs.
    var p50Microseconds: Double
    var p99Microseconds: Double
    var p999Microseconds: Double
    var maxMicroseconds: Double
    /// The first non-2xx answer (status and the start of its body), or "".
    var firstFailure: String
    /// Paced loads: requests whose scheduled send had passed when their connection's previous answer came (the
    /// schedule slipped; they were sent at once, late), and the latest of them, µs behind its schedule. 0 otherwise.
    var lateSends: Int
    var maxSlipMicroseconds: Double
    /// From just before wrk started to just after it exited (the observers' window).
    var window: Duration = .zero
    /// wrk's user + system CPU time over its whole life, seconds.
    var cpuSeconds: Double = 0
    /// Notification ids of the 2xx answers, when the load keeps them.
    var ids: [String] = []
    /// The 2xx answers with their times, when a paced load keeps ids.
    var sends: [WrkSend] = []

    private enum CodingKeys: String, CodingKey {
        case requests, succeeded, otherStatus, connectErrors, readErrors, writeErrors, timeouts, durationMicroseconds,
            p50Microseconds, p99Microseconds, p999Microseconds, maxMicroseconds, firstFailure, lateSends,
            maxSlipMicroseconds
    }

    var duration: Double { durationMicroseconds / 1_000_000 }
    /// 2xx per second of wrk's own run time.
    var perSecond: Double { Double(succeeded) / duration }
    var socketErrors: Int { connectErrors + readErrors + writeErrors }

    func milliseconds(atPercentile percentile: Double) -> Double {
        switch percentile {
        case 50: p50Microseconds / 1_000
        case 99: p99Microseconds / 1_000
        default: p999Microseconds / 1_000
        }
    }

    /// A note for the report when some requests did not get a 2xx.
    func failureNote(_ what: String) -> String? {
        guard otherStatus > 0 || socketErrors > 0 || timeouts > 0 else { return nil }
        return "\(what): \(otherStatus) non-2xx answers, \(socketErrors) socket errors (connect \(connectErrors),"
            + " read \(readErrors), write \(writeErrors)), \(timeouts) answers slower than wrk's timeout"
            + (firstFailure.isEmpty ? "" : "; first: \(firstFailure)")
    }
}
