import Foundation
import NIOCore
import Synchronization

extension Bench {
    /// (a) the HTTP stack's own limit: a bare Hummingbird route in a child process, same load, same body;
    /// (b) the APNs double's own limit: a bare HTTP/2 client with valid provider tokens.
    func baselines() async throws -> Baselines {
        Progress.shared.phase("Baseline a: bare Hummingbird route (child process), \(plan.clients) clients")
        let bare = try ChildProcess(
            name: "bare-server", executable: binaries.bench, arguments: ["bare-server"],
            environment: ProcessInfo.processInfo.environment)
        let (port, _) = try await bare.waitUntilListening()
        try await Task.sleep(for: .seconds(1))
        let idleRSS = ProcessStats.residentBytes(of: bare.pid) ?? 0
        let client = LoadClient(port: port, connections: plan.clients)
        let body = DeviceIdentity.seeded(0, salt: "bare").identity.notifyBody()
        let cpu = CPUWindow(pid: bare.pid)
        let result = await ClosedLoop.run(
            concurrency: plan.clients, warmup: plan.warmup, duration: plan.measure, label: "bare stack", observers: [cpu]
        ) { _ in
            switch await Self.notify(client, body: body) {
            case .success: .success(())
            case .failure(let failure): .failure(failure)
            }
        }
        await client.shutdown()
        await bare.stop()
        if let note = result.failureNote("bare stack") { report.note(note) }
        report.add(
            Figure(
                scenario: "baseline", name: "bare Hummingbird route, \(plan.clients) clients", value: result.perSecond,
                unit: "req/s"))
        report.add(
            Figure(
                scenario: "baseline", name: "bare route request latency p99 at saturation",
                value: result.latency.milliseconds(atPercentile: 99), unit: "ms"))
        report.add(
            Figure(scenario: "baseline", name: "bare Hummingbird idle RSS", value: Double(idleRSS) / 1_048_576, unit: "MB"))
        cpu.report(into: report, scenario: "baseline", what: "bare server")

        Progress.shared.phase("Baseline b: APNs double, bare HTTP/2 client (2 connections, 256 streams in flight)")
        let benchCPU = CPUWindow(pid: 0)
        let (doubleResult, accepted) = try await APNsBaseline.measure(
            apns, connections: 2, inFlight: 256, warmup: plan.warmup, duration: plan.measure, cpu: benchCPU)
        if let note = doubleResult.failureNote("APNs double baseline") { report.note(note) }
        let doubleRate = Double(accepted) / doubleResult.window.seconds
        report.add(
            Figure(
                scenario: "baseline", name: "APNs double, bare HTTP/2 client (same process)", value: doubleRate,
                unit: "push/s"))
        benchCPU.report(into: report, scenario: "baseline", what: "bench process (double + its client)")
        return Baselines(bareStack: result.perSecond, bareIdleRSS: idleRSS, double: doubleRate)
    }
}

/// CPU time a process used over a measurement window, as a share of one core.
final class CPUWindow: WindowObserver {
    private let pid: Int32
    private let times = Mutex<(start: Double?, end: Double?, startAt: ContinuousClock.Instant?, endAt: ContinuousClock.Instant?)>(
        (nil, nil, nil, nil))

    /// `pid` 0 is this process.
    init(pid: Int32) { self.pid = pid }

    func windowStarted() {
        let cpu = ProcessStats.cpuSeconds(of: pid)
        times.withLock {
            $0.start = cpu
            $0.startAt = .now
        }
    }

    func windowEnded() {
        let cpu = ProcessStats.cpuSeconds(of: pid)
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

    func report(into report: Report, scenario: String, what: String) {
        guard let cores else { return }
        report.add(Figure(scenario: scenario, name: "CPU of \(what)", value: cores, unit: "cores"))
    }
}

/// Answers `200` the APNs double wrote over a measurement window.
final class DeliveryWindow: WindowObserver {
    private let apns: BenchAPNs
    private let before: Int
    private let counts = Mutex((start: 0, end: 0))

    init(_ apns: BenchAPNs) {
        self.apns = apns
        before = apns.delivered
    }

    func windowStarted() { counts.withLock { $0.start = apns.delivered } }
    func windowEnded() { counts.withLock { $0.end = apns.delivered } }

    /// Deliveries in the window.
    var delivered: Int { counts.withLock { $0.end - $0.start } }

    var progress: String? { "delivered \(Format.grouped(Double(apns.delivered - before)))" }
}
