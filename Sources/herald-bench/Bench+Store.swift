import Foundation
import HeraldCore
import NIOCore

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
            let count = store.count
            let salt = store.salt
            // The same number of bodies for both stores, each to a device picked at random (SplitMix64 order).
            let bodies = (0..<plan.scaleBodies).map { index in
                DeviceIdentity.seeded(Self.spread(index, over: count), salt: salt).identity.notifyBody()
            }
            let load = try wrk.load("scenario-5-\(count)", path: "/api/push/notify", bodies: bodies, connections: plan.clients)
            let heraldCPU = CPUWindow(pid: herald.pid)
            let deliveries = DeliveryWindow(apns)
            let (_, result) = try await wrk.run(
                load, port: port, warmup: plan.warmup, duration: plan.scaleMeasure,
                label: "notify, \(Format.grouped(Double(count))) devices", observers: [heraldCPU, deliveries])
            if let note = result.failureNote("scenario 5, \(count) devices") { report.note(note) }
            rates[count] = result.perSecond
            report.add(
                Figure(
                    scenario: scenario, name: "notify accepted/s, \(Format.grouped(Double(count))) devices (wrk)",
                    value: result.perSecond, unit: "req/s", ratio: result.perSecond / baselines.bareStack,
                    ratioTo: "bare stack"))
            if let perNotification = heraldCPU.milliseconds(per: deliveries.delivered) {
                report.add(
                    Figure(
                        scenario: scenario,
                        name: "Herald CPU per delivered notification, \(Format.grouped(Double(count))) devices",
                        value: perNotification, unit: "ms CPU"))
            }
            if store.count == big.count {
                let client = LoadClient(port: port, connections: plan.clients)
                let (_, registration) = await Registration.register(
                    count: plan.scaleRegistrations, concurrency: plan.clients, platform: .apns, client: client,
                    salt: "scale-registration", label: "register on the large store")
                await client.shutdown()
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
}
