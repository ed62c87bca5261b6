import Foundation
import NIOCore
import Synchronization

extension Bench {
    /// (a) the HTTP stack's own limit: a bare Hummingbird route in a child process, same load, same body;
    /// (b) the APNs double's own limit: a bare HTTP/2 client with valid provider tokens.
    func baselines() async throws -> Baselines {
        Progress.shared.phase("Baseline a: bare Hummingbird route (child process), wrk, \(plan.clients) connections")
        let bare = try ChildProcess(
            name: "bare-server", executable: binaries.bench, arguments: ["bare-server"],
            environment: ProcessInfo.processInfo.environment)
        let (port, _) = try await bare.waitUntilListening()
        try await Task.sleep(for: .seconds(1))
        let idleRSS = ProcessStats.residentBytes(of: bare.pid) ?? 0
        // The same body shape as scenario 1, for as many (made-up) users as scenario 1 has devices.
        let bodies = (0..<plan.devices).map { DeviceIdentity.seeded($0, salt: "bare").identity.notifyBody() }
        let load = try wrk.load("baseline-a", path: "/api/push/notify", bodies: bodies, connections: plan.clients)
        let cpu = CPUWindow(pid: bare.pid)
        let (_, result) = try await wrk.run(
            load, port: port, warmup: plan.warmup, duration: plan.measure, label: "bare stack", observers: [cpu])
        await bare.stop()
        if let note = result.failureNote("bare stack") { report.note(note) }
        let scenario = "baseline"
        report.add(
            Figure(
                scenario: scenario, name: "bare Hummingbird route, wrk, \(plan.clients) connections", value: result.perSecond,
                unit: "req/s"))
        report.add(
            Figure(
                scenario: scenario, name: "bare route request latency p99 at saturation (wrk)",
                value: result.milliseconds(atPercentile: 99), unit: "ms"))
        report.add(
            Figure(scenario: scenario, name: "bare Hummingbird idle RSS", value: Double(idleRSS) / 1_048_576, unit: "MB"))
        cpu.report(into: report, scenario: scenario, what: "bare server")
        let cpuPerRequest = cpu.milliseconds(per: result.succeeded)
        if let cpuPerRequest {
            report.add(
                Figure(
                    scenario: scenario, name: "bare server CPU per request (user+system)", value: cpuPerRequest,
                    unit: "ms CPU"))
        }
        reportGenerator(result, into: scenario)

        Progress.shared.phase("Baseline b: APNs double, bare HTTP/2 client (2 connections, 256 streams in flight)")
        let doubleRate = try await doubleLimit(apns, scenario: scenario) { cpu in
            try await APNsBaseline.measure(
                apns, connections: 2, inFlight: 256, warmup: plan.warmup, duration: plan.measure, cpu: cpu)
        }
        return Baselines(
            bareStack: result.perSecond, bareIdleRSS: idleRSS, bareCPUPerRequest: cpuPerRequest, double: doubleRate)
    }

    /// A double's own limit: `measure` drives a bare client against it (with the bench process's CPU as its observer)
    /// over a window as long as the load scenarios'; returns the `200`s per second.
    func doubleLimit(
        _ provider: any BenchProvider, scenario: String,
        measure: (CPUWindow) async throws -> (result: ClosedLoopResult, accepted: Int)
    ) async throws -> Double {
        let benchCPU = CPUWindow(pid: 0)
        let (result, accepted) = try await measure(benchCPU)
        if let note = result.failureNote("\(provider.name) double baseline") { report.note(note) }
        let rate = Double(accepted) / result.window.seconds
        report.add(
            Figure(
                scenario: scenario, name: "\(provider.name) double, bare HTTP/2 client (same process)", value: rate,
                unit: "push/s"))
        benchCPU.report(into: report, scenario: scenario, what: "bench process (double + its client)")
        return rate
    }

    /// wrk's own CPU over its run, so that the reader can see whether the load generator was a bottleneck.
    func reportGenerator(_ result: WrkResult, into scenario: String) {
        guard result.window > .zero else { return }
        report.add(
            Figure(
                scenario: scenario, name: "CPU of wrk (the load generator, its whole run)",
                value: result.cpuSeconds / result.window.seconds, unit: "cores"))
    }
}

/// CPU time a process (or the whole machine) used over a measurement window, as a share of one core.
final class CPUWindow: WindowObserver {
    private let reading: @Sendable () -> Double?
    private let times = Mutex<(start: Double?, end: Double?, startAt: ContinuousClock.Instant?, endAt: ContinuousClock.Instant?)>(
        (nil, nil, nil, nil))

    /// A process's user + system time; `pid` 0 is this process.
    convenience init(pid: Int32) { self.init(reading: { ProcessStats.cpuSeconds(of: pid) }) }

    /// CPU seconds as `reading` gives them (``ProcessStats/machineBusySeconds()`` for the whole machine).
    init(reading: @escaping @Sendable () -> Double?) { self.reading = reading }

    func windowStarted() {
        let cpu = reading()
        times.withLock {
            $0.start = cpu
            $0.startAt = .now
        }
    }

    func windowEnded() {
        let cpu = reading()
        times.withLock {
            $0.end = cpu
            $0.endAt = .now
        }
    }

    /// Cores used on average over the window (1.0 = one core busy all the time).
    var cores: Double? {
        times.withLock { times in
            guard let start = times.start, let end = times.end, let startAt = times.startAt, let endAt = times.endAt else {
                return nil
            }
            return (end - start) / (endAt - startAt).seconds
        }
    }

    /// User + system CPU time over the window, in seconds.
    var seconds: Double? {
        times.withLock { times in times.start.flatMap { start in times.end.map { $0 - start } } }
    }

    /// CPU time over the window per unit of work done in it (a request, a delivered notification), in milliseconds.
    func milliseconds(per count: Int) -> Double? {
        guard count > 0, let seconds else { return nil }
        return seconds * 1_000 / Double(count)
    }

    func report(into report: Report, scenario: String, what: String) {
        guard let cores else { return }
        report.add(Figure(scenario: scenario, name: "CPU of \(what)", value: cores, unit: "cores"))
    }
}

/// Answers `200` a provider double wrote over a measurement window.
final class DeliveryWindow: WindowObserver {
    private let provider: any BenchProvider
    private let before: Int
    private let counts = Mutex((start: 0, end: 0))

    init(_ provider: any BenchProvider) {
        self.provider = provider
        before = provider.delivered
    }

    func windowStarted() { counts.withLock { $0.start = provider.delivered } }
    func windowEnded() { counts.withLock { $0.end = provider.delivered } }

    /// Deliveries in the window.
    var delivered: Int { counts.withLock { $0.end - $0.start } }

    var progress: String? { "delivered \(Format.grouped(Double(provider.delivered - before)))" }
}
