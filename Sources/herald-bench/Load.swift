import AsyncHTTPClient
import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Keep-alive HTTP/1.1 connections to one server over loopback, as many as there are concurrent clients: the Swift
/// client of the requests whose answers the benchmark reads one by one (registrations). The notify load, closed loop
/// and open loop, is driven by wrk instead (``Wrk``).
final class LoadClient: Sendable {
    let client: HTTPClient
    let baseURL: String

    init(port: Int, connections: Int) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(120)),
            connectionPool: .init(idleTimeout: .seconds(600), concurrentHTTP1ConnectionsPerHostSoftLimit: connections),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        baseURL = "http://127.0.0.1:\(port)"
    }

    /// `POST path` with a JSON body; the answer's status and body.
    func post(_ path: String, body: ByteBuffer, headers: [(String, String)] = []) async throws -> (status: UInt, body: ByteBuffer) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(body)
        let response = try await client.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, bytes)
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}

/// Counters shared by the workers of one load run.
final class LoadCounters: Sendable {
    let succeeded = Atomic(0)
    let failed = Atomic(0)
    let nextIndex = Atomic(0)
    let measuring = Atomic(false)
    let stop = Atomic(false)
    /// The first unexpected answer or error, for the report.
    let firstFailure = Mutex<String?>(nil)

    func fail(_ description: String) {
        failed.add(1, ordering: .relaxed)
        firstFailure.withLock { $0 = $0 ?? description }
    }
}

/// Latencies in microseconds, 1 µs to 10 minutes, 3 significant digits.
typealias LatencyHistogram = Histogram<UInt64>

extension Histogram where Count == UInt64 {
    static func latency() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }

    mutating func record(_ duration: Duration) {
        _ = record(UInt64(Swift.max(1, duration.seconds * 1_000_000)))
    }

    /// The value at a percentile, in milliseconds.
    func milliseconds(atPercentile percentile: Double) -> Double {
        Double(valueAtPercentile(percentile)) / 1_000
    }
}

/// The outcome of a closed-loop run over its measurement window.
struct ClosedLoopResult: Sendable {
    /// Successful requests in the measurement window.
    var succeeded: Int
    /// Successful requests in the whole run (warm-up and the answers that came after the window included).
    var totalSucceeded: Int
    var failed: Int
    var window: Duration
    var latency: LatencyHistogram
    var firstFailure: String?

    var perSecond: Double { Double(succeeded) / window.seconds }
}

/// Drives load from Swift: `concurrency` clients, each sending its next request as soon as the previous one was answered.
/// Used where each answer is needed (registrations) and for the APNs double's baseline (HTTP/2 over TLS, which wrk does
/// not speak); Herald's and the bare stack's throughput are measured with wrk.
enum ClosedLoop {
    /// Runs for `warmup` (not counted), then measures for `duration`; or, with `totalRequests`, sends exactly that many
    /// (no warm-up) and measures the whole run. `send(index)` returns whether the answer was the expected one.
    ///
    /// The `observers` are told when the measurement window starts and ends, so that other counters (the APNs
    /// double's, CPU times) are read over the same window.
    static func run(
        concurrency: Int, warmup: Duration = .zero, duration: Duration? = nil, totalRequests: Int? = nil,
        label: String, observers: [any WindowObserver] = [],
        send: @escaping @Sendable (Int) async -> Result<Void, BenchFailure>
    ) async -> ClosedLoopResult {
        let onWindowStart = { for observer in observers { observer.windowStarted() } }
        let onWindowEnd = { for observer in observers { observer.windowEnded() } }
        let counters = LoadCounters()
        let clock = ContinuousClock()

        let monitor = Task {
            let start = clock.now
            var previous = 0
            var previousAt = start
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let now = clock.now
                let done = counters.succeeded.load(ordering: .relaxed)
                let rate = Double(done - previous) / (now - previousAt).seconds
                previous = done
                previousAt = now
                let phase = counters.measuring.load(ordering: .relaxed) ? "measuring" : "warming up"
                Progress.shared.status(
                    "\(label): \(String(format: "%.0f", (now - start).seconds)) s \(phase), \(Format.grouped(Double(done))) ok"
                        + " (\(Format.grouped(rate))/s), \(counters.failed.load(ordering: .relaxed)) failed"
                        + observers.compactMap(\.progress).map { ", " + $0 }.joined())
            }
        }
        defer { monitor.cancel() }

        let countsEverything = totalRequests != nil || warmup == .zero
        var windowStart = clock.now
        if countsEverything {
            onWindowStart()
            windowStart = clock.now
            counters.measuring.store(true, ordering: .relaxed)
        }
        let (latency, windowCounts, windowEnd) = await withTaskGroup(of: LatencyHistogram.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var histogram = LatencyHistogram.latency()
                    while !counters.stop.load(ordering: .relaxed) {
                        let index = counters.nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
                        if let totalRequests, index >= totalRequests { break }
                        let started = clock.now
                        let result = await send(index)
                        let elapsed = clock.now - started
                        switch result {
                        case .success:
                            counters.succeeded.add(1, ordering: .relaxed)
                            if counters.measuring.load(ordering: .relaxed) { histogram.record(elapsed) }
                        case .failure(let failure):
                            counters.fail(failure.description)
                            // Do not spin on a server that refuses everything.
                            try? await Task.sleep(for: .milliseconds(10))
                        }
                    }
                    return histogram
                }
            }
            var atStart = (0, 0)
            var windowCounts = (0, 0)
            var windowEnd: ContinuousClock.Instant?
            if totalRequests == nil {
                if !countsEverything {
                    try? await Task.sleep(for: warmup)
                    onWindowStart()
                    windowStart = clock.now
                    atStart = (counters.succeeded.load(ordering: .relaxed), counters.failed.load(ordering: .relaxed))
                    counters.measuring.store(true, ordering: .relaxed)
                }
                try? await Task.sleep(until: windowStart + (duration ?? .seconds(10)), clock: clock)
                // Answers still in flight at the end are not counted: the window closes here.
                windowEnd = clock.now
                windowCounts = (
                    counters.succeeded.load(ordering: .relaxed) - atStart.0,
                    counters.failed.load(ordering: .relaxed) - atStart.1
                )
                onWindowEnd()
                counters.stop.store(true, ordering: .relaxed)
            }
            var merged = LatencyHistogram.latency()
            for await histogram in group { merged.add(histogram) }
            return (merged, windowCounts, windowEnd)
        }
        let succeeded: Int
        let failed: Int
        let window: Duration
        if let windowEnd {
            (succeeded, failed) = windowCounts
            window = windowEnd - windowStart
        } else {
            onWindowEnd()
            succeeded = counters.succeeded.load(ordering: .relaxed)
            failed = counters.failed.load(ordering: .relaxed)
            window = clock.now - windowStart
        }
        Progress.shared.endStatus()
        return ClosedLoopResult(
            succeeded: succeeded, totalSucceeded: counters.succeeded.load(ordering: .relaxed), failed: failed, window: window,
            latency: latency, firstFailure: counters.firstFailure.withLock { $0 })
    }
}

/// Something read at the start and at the end of a measurement window (CPU times, the APNs double's counters).
protocol WindowObserver: Sendable {
    func windowStarted()
    func windowEnded()
    /// A few words for the progress line, if any.
    var progress: String? { get }
}

extension WindowObserver {
    var progress: String? { nil }
}

/// Why one benchmark request did not get the answer it should have.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String
}
