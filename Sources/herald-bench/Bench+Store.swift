import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

extension Bench {
    /// Scenario 5: notify throughput with many registered devices against 1,000, database size per device,
    /// startup time, and registrations on the large store.
    func storeScale(context: ScenarioContext) async throws {
        let baselines = context.baselines
        Progress.shared.phase(
            "Scenario 5: store scale, \(Format.grouped(Double(plan.scaleSmallDevices))) vs"
                + " \(Format.grouped(Double(plan.scaleDevices))) devices (inserted directly into SQLite)"
        )
        let small = try await Seeder.seed(
            path: databasePath("scale-small.sqlite"), count: plan.scaleSmallDevices, salt: "small", label: "seed small store")
        let big = try await Seeder.seed(
            path: databasePath("scale-big.sqlite"), count: plan.scaleDevices, salt: "big", label: "seed large store")
        let scenario = "5 store scale"
        report.add(
            Figure(
                scenario: scenario, name: "devices inserted directly (GRDB, one transaction per 50,000)",
                value: Double(big.count) / big.duration.seconds, unit: "dev/s"))
        let perDevice = Double(big.databaseBytes - small.databaseBytes) / Double(max(1, big.count - small.count))
        report.add(Figure(scenario: scenario, name: "database size per device", value: perDevice, unit: "B"))
        report.add(
            Figure(
                scenario: scenario, name: "database size with \(Format.grouped(Double(big.count))) devices",
                value: Double(big.databaseBytes) / 1_048_576, unit: "MB"))

        var rates: [Int: Double] = [:]
        for store in [small, big] {
            let herald = try startHerald("herald (\(store.count) devices)", database: store.path)
            let (port, startup) = try await herald.waitUntilListening()
            report.add(
                Figure(
                    scenario: scenario, name: "startup to listening, \(Format.grouped(Double(store.count))) devices",
                    value: startup.milliseconds, unit: "ms"))
            let client = LoadClient(port: port, connections: plan.clients)
            let count = store.count
            let salt = store.salt
            let result = await ClosedLoop.run(
                concurrency: plan.clients, warmup: plan.warmup, duration: plan.scaleMeasure,
                label: "notify, \(Format.grouped(Double(count))) devices"
            ) { index in
                let body = DeviceIdentity.seeded(Self.spread(index, over: count), salt: salt).identity.notifyBody()
                switch await Self.notify(client, body: body) {
                case .success: return .success(())
                case .failure(let failure): return .failure(failure)
                }
            }
            if let note = result.failureNote("scenario 5, \(count) devices") { report.note(note) }
            rates[count] = result.perSecond
            report.add(
                Figure(
                    scenario: scenario, name: "notify accepted/s, \(Format.grouped(Double(count))) devices",
                    value: result.perSecond, unit: "req/s", ratio: result.perSecond / baselines.bareStack,
                    ratioTo: "bare stack"))
            if store.count == big.count {
                let (_, registration) = await Registration.register(
                    count: plan.scaleRegistrations, concurrency: plan.clients, platform: .apns, client: client,
                    salt: "scale-registration", label: "register on the large store")
                if let note = registration.failureNote("registration on the large store") { report.note(note) }
                report.add(
                    Figure(
                        scenario: scenario, name: "registrations over HTTP, \(Format.grouped(Double(count))) devices",
                        value: registration.perSecond, unit: "req/s",
                        ratio: context.registrationRate.map { registration.perSecond / $0 },
                        ratioTo: context.registrationRate == nil ? nil : "empty store"))
                if let rss = ProcessStats.residentBytes(of: herald.pid) {
                    report.add(
                        Figure(
                            scenario: scenario, name: "Herald RSS, \(Format.grouped(Double(count))) devices",
                            value: Double(rss) / 1_048_576, unit: "MB", ratio: Double(rss) / Double(baselines.bareIdleRSS),
                            ratioTo: "bare idle"))
                }
            }
            await client.shutdown()
            await herald.stop()
        }
        if let smallRate = rates[small.count], let bigRate = rates[big.count], smallRate > 0 {
            report.add(
                Figure(
                    scenario: scenario,
                    name:
                        "notify throughput, \(Format.grouped(Double(big.count)))"
                        + " vs \(Format.grouped(Double(small.count))) devices",
                    value: bigRate / smallRate, unit: "x", ratio: bigRate / smallRate,
                    ratioTo: "\(Format.grouped(Double(small.count))) devices", target: "≥ 0.9",
                    met: bigRate / smallRate >= 0.9))
        }
        if big.count < 1_000_000 {
            report.note("scenario 5 ran with \(Format.grouped(Double(big.count))) devices, not the issue's 1,000,000")
        }
    }

    /// Spreads request `index` over `count` devices in a fixed pseudo-random order (SplitMix64).
    static func spread(_ index: Int, over count: Int) -> Int {
        var value = UInt64(truncatingIfNeeded: index) &+ 0x9E37_79B9_7F4A_7C15
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        value ^= value >> 31
        return Int(value % UInt64(count))
    }

    /// Scenario 6: notifications accepted while APNs answers 503, `kill -9`, a restart with APNs healthy, and the
    /// time until every pending notification was delivered.
    func recovery(baselines: Baselines) async throws {
        let pending = plan.pending
        Progress.shared.phase("Scenario 6: recovery, \(Format.grouped(Double(pending))) pending notifications, kill -9, restart")
        let scenario = "6 recovery"
        let store = try await Seeder.seed(
            path: databasePath("recovery.sqlite"), count: 1_000, salt: "recovery", label: "seed 1,000 devices")
        let bodies = (0..<store.count).map { DeviceIdentity.seeded($0, salt: store.salt).identity.notifyBody() }
        apns.double.failNext(1_000_000_000, status: 503, reason: "ServiceUnavailable")
        let first = try startHerald("herald (before the crash)", database: store.path)
        let (port, _) = try await first.waitUntilListening()
        let client = LoadClient(port: port, connections: plan.clients)
        let fill = await ClosedLoop.run(concurrency: plan.clients, totalRequests: pending, label: "accept while APNs answers 503")
        {
            index in
            switch await Self.notify(client, body: bodies[index % bodies.count]) {
            case .success: .success(())
            case .failure(let failure): .failure(failure)
            }
        }
        await client.shutdown()
        if let note = fill.failureNote("scenario 6 fill") { report.note(note) }
        report.add(
            Figure(
                scenario: scenario, name: "accepted/s while APNs answers 503", value: fill.perSecond, unit: "req/s",
                ratio: fill.perSecond / baselines.bareStack,
                ratioTo: "bare stack"))
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        let due = try Seeder.pendingDueTimes(path: store.path)
        report.add(Figure(scenario: scenario, name: "pending after kill -9", value: Double(due.count), unit: "notif"))
        if due.count < fill.succeeded {
            report.note("scenario 6: only \(due.count) of \(fill.succeeded) accepted notifications were pending at the crash")
        }

        apns.double.clearFaults()
        apns.recorder.start()
        let restartedAt = Date()
        let second = try startHerald("herald (after the crash)", database: store.path)
        let (_, startup) = try await second.waitUntilListening()
        let listening = second.startedAt + startup
        let dueAtRestart = due.prefix { $0 <= restartedAt }.count
        let clock = ContinuousClock()
        let deadline = clock.now + plan.drainTimeout
        var snapshot = apns.recorder.snapshot
        while snapshot.count < due.count, clock.now < deadline {
            // Stop early when everything due by now is delivered and the rest waits for its back-off for long.
            let now = Date()
            let dueByNow = due.prefix { $0 <= now }.count
            if snapshot.count >= dueByNow, dueByNow < due.count, due[dueByNow].timeIntervalSince(now) > 20 { break }
            Progress.shared.status(
                "draining: \(Format.grouped(Double(snapshot.count))) of \(Format.grouped(Double(due.count))) delivered,"
                    + " \(Format.grouped(Double(dueByNow))) due so far"
            )
            try? await Task.sleep(for: .milliseconds(50))
            snapshot = apns.recorder.snapshot
        }
        Progress.shared.endStatus()
        let answered = apns.recorder.stop().values.sorted()
        await second.stop()
        report.add(
            Figure(
                scenario: scenario, name: "of which due at the restart (the rest wait for their back-off)",
                value: Double(dueAtRestart), unit: "notif"))
        report.add(Figure(scenario: scenario, name: "restart to listening", value: startup.milliseconds, unit: "ms"))
        if dueAtRestart > 0, answered.count >= dueAtRestart {
            let drained = answered[dueAtRestart - 1]
            report.add(
                Figure(
                    scenario: scenario, name: "restart to the due backlog delivered", value: (drained - second.startedAt).seconds,
                    unit: "s"))
            report.add(
                Figure(
                    scenario: scenario, name: "drain rate of the due backlog",
                    value: Double(dueAtRestart) / (drained - listening).seconds, unit: "push/s"))
        }
        if answered.count >= due.count, let last = answered.last {
            report.add(
                Figure(
                    scenario: scenario, name: "restart to every pending delivered", value: (last - second.startedAt).seconds,
                    unit: "s"))
        } else {
            report.note(
                "scenario 6: \(answered.count) of \(due.count) pending notifications were delivered after the restart"
                    + " within the wait; the rest were not due yet (back-off after the 503s)"
            )
        }
        if let lastDue = due.last {
            report.add(
                Figure(
                    scenario: scenario, name: "last pending notification due after the restart (back-off)",
                    value: max(0, lastDue.timeIntervalSince(restartedAt)), unit: "s"))
        }
    }
}
