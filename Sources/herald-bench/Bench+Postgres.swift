import Foundation
import HeraldCore
import HeraldStore
import NIOCore

extension Bench {
    /// Scenario 7: scenario 1's accept-and-deliver load on PostgreSQL, first on one Herald instance, then on three
    /// instances on one database with the load split across them (three wrk processes at once, each with a third of
    /// the connections and of the devices). Each configuration starts on a fresh database of its own, created on the
    /// server `serverURL` names and dropped at the end. Accepted/s, delivered/s, the CPU of the Herald processes and of
    /// the PostgreSQL server's processes per notification, duplicates and lost notifications; beside scenario 1's
    /// SQLite figure when it ran in the same run.
    func postgres(serverURL: String?, context: ScenarioContext) async throws {
        let scenario = "7 postgres"
        Progress.shared.phase("Scenario 7: PostgreSQL, 1 vs 3 instances on one database")
        guard let serverURL else {
            report.note(
                "scenario 7 (PostgreSQL, 1 vs 3 instances) was not run: no PostgreSQL server was given"
                    + " (--postgres-url postgres://user@host:port/database, or HERALD_BENCH_POSTGRES_URL)")
            return
        }
        let server: PostgresServer
        do {
            server = try await PostgresServer(url: serverURL)
        } catch {
            report.note("scenario 7 (PostgreSQL) was not run: \(error)")
            return
        }
        var figures: [Int: PostgresFigures] = [:]
        for instances in [1, 3] {
            let database: PostgresServer.Database
            do {
                database = try await server.createDatabase()
            } catch {
                report.note("scenario 7 (PostgreSQL, \(instances) instances): could not create a database: \(String(reflecting: error))")
                break
            }
            Progress.shared.line("  database \(database.name) created on \(PostgresURL.redacted(serverURL))")
            let outcome: Result<PostgresFigures?, any Error>
            do {
                outcome = .success(
                    try await acceptAndDeliver(instances: instances, on: database, server: server, baselines: context.baselines))
            } catch {
                outcome = .failure(error)
            }
            do {
                try await server.dropDatabase(database.name)
            } catch {
                report.note("scenario 7: could not drop database \(database.name): \(String(reflecting: error))")
            }
            switch outcome {
            case .success(let result):
                figures[instances] = result
            case .failure(let error):
                report.note("scenario 7 (PostgreSQL, \(instances) instances) failed: \(String(reflecting: error))")
            }
            if figures[instances] == nil { break }
        }
        await server.shutdown()

        if let one = figures[1], let sqlite = context.sqlite {
            reportAgainstScenario1(
                sqlite, delivered: one.delivered, cpuPerNotification: one.heraldCPUPerNotification, scenario: scenario,
                what: "1 instance on PostgreSQL", reference: "SQLite")
        } else if figures[1] != nil {
            report.note("scenario 7: scenario 1 (SQLite) did not run, so there is no SQLite figure beside it (--scenarios 1,7)")
        }
        if let one = figures[1], let three = figures[3] {
            report.add(
                Figure(
                    scenario: scenario, name: "delivered/s, 3 instances against 1 (same database server)",
                    value: three.delivered, unit: "push/s", ratio: three.delivered / one.delivered, ratioTo: "1 instance"))
            report.add(
                Figure(
                    scenario: scenario, name: "accepted/s, 3 instances against 1 (same database server)",
                    value: three.accepted, unit: "req/s", ratio: three.accepted / one.accepted, ratioTo: "1 instance"))
        }
    }

    /// One configuration of scenario 7: `instances` Herald processes on `database`, devices registered through the
    /// first, then scenario 1's wrk load split across them.
    private func acceptAndDeliver(
        instances count: Int, on database: PostgresServer.Database, server: PostgresServer, baselines: Baselines
    ) async throws -> PostgresFigures? {
        let scenario = "7 postgres"
        let label = count == 1 ? "1 instance" : "\(count) instances"
        Progress.shared.line(
            "  \(label): start, register \(plan.devices) devices over HTTP, then wrk with \(plan.clients) connections"
                + (count == 1 ? "" : " split across the instances"))
        var heralds: [ChildProcess] = []
        var ports: [Int] = []
        do {
            // One after another: the first one creates the schema.
            for index in 0..<count {
                let herald = try startHerald(
                    "herald (PostgreSQL, \(label), #\(index))", database: database.url,
                    environment: ["HERALD_INSTANCE_ID": "bench-\(count)-\(index)"])
                heralds.append(herald)
                ports.append(try await herald.waitUntilListening().port)
            }
            let figures = try await measure(
                heralds: heralds, ports: ports, database: database, server: server, baselines: baselines,
                scenario: scenario, label: label)
            await stop(heralds, label: label)
            return figures
        } catch {
            await stop(heralds, label: label)
            throw error
        }
    }

    private func stop(_ heralds: [ChildProcess], label: String) async {
        for herald in heralds { herald.signal(SIGTERM) }
        for herald in heralds {
            let status = await herald.stop()
            if status != 0 {
                report.note(
                    "scenario 7, \(label): \(herald.name) did not exit cleanly on SIGTERM"
                        + " (status \(status.map(String.init) ?? "none"))")
            }
        }
    }

    private func measure(
        heralds: [ChildProcess], ports: [Int], database: PostgresServer.Database, server: PostgresServer,
        baselines: Baselines, scenario: String, label: String
    ) async throws -> PostgresFigures? {
        let count = heralds.count
        let client = LoadClient(port: ports[0], connections: plan.clients)
        let (devices, registration) = await Registration.register(
            count: plan.devices, concurrency: plan.clients, platform: .apns, client: client, salt: "postgres-\(count)",
            label: "register (\(label))")
        await client.shutdown()
        if let note = registration.failureNote("scenario 7, \(label), registration") { report.note(note) }
        guard !devices.isEmpty else {
            report.note("scenario 7, \(label): no device could be registered. Herald's output:\n\(heralds[0].log)")
            return nil
        }
        try? await Task.sleep(for: .seconds(1))  // the instances hear of each other (LISTEN/NOTIFY)

        // Instance k gets devices k, k + count, …, and its share of the connections and of wrk's threads: no device
        // is sent to by two instances at once, as no device is by two connections at once in scenario 1.
        let bodies = devices.map { $0.notifyBody() }
        let threads = max(1, (plan.wrkThreads + count - 1) / count)
        let loads = try (0..<count).map { index in
            try wrk.load(
                "scenario-7-\(count)-\(index)", path: "/api/push/notify",
                bodies: stride(from: index, to: bodies.count, by: count).map { bodies[$0] },
                connections: plan.clients / count + (index < plan.clients % count ? 1 : 0), keepIDs: true,
                threads: threads)
        }
        let ledger = APNsLedger(apns)
        let warmups = try await runTogether(loads, ports: ports, duration: plan.warmup, label: "\(label) (warm-up)")
        // The statistics of a database in service, not of the empty one created for this run (PostgresServer.analyze).
        do {
            try await server.analyze(database)
        } catch {
            report.note("scenario 7, \(label): ANALYZE failed: \(String(reflecting: error))")
        }

        // The server's processes after the warm-up: Herald's pools have opened their connections by then.
        let processes = try await server.processes(database: database.name)
        let heraldCPU = ProcessSetCPU(heralds.map(\.pid))
        let postgresCPU = ProcessSetCPU(processes.database)
        let sharedCPU = ProcessSetCPU(processes.shared)
        let othersCPU = ProcessSetCPU(processes.others)
        let benchCPU = CPUWindow(pid: 0)
        let deliveries = DeliveryWindow(apns)
        let observers: [any WindowObserver] = [heraldCPU, postgresCPU, sharedCPU, othersCPU, benchCPU, deliveries]
        let clock = ContinuousClock()
        let statementsBefore = await server.statementTotals(database: database.name)
        for observer in observers { observer.windowStarted() }
        let started = clock.now
        let results = try await runTogether(loads, ports: ports, duration: plan.measure, label: label)
        let window = clock.now - started
        for observer in observers { observer.windowEnded() }
        let statementsAfter = await server.statementTotals(database: database.name)
        let processesAfter = try await server.processes(database: database.name)

        // Every notification answered 2xx, warm-ups included, must reach the double exactly once.
        let accepted = Set((warmups + results).flatMap(\.ids))
        let audit = try await auditDeliveries(
            of: accepted, answered2xx: (warmups + results).reduce(0) { $0 + $1.succeeded }, ledger: ledger,
            context: "scenario 7, \(label)")

        let acceptedRate = results.reduce(0) { $0 + $1.perSecond }
        let deliveredRate = Double(deliveries.delivered) / window.seconds
        for (index, result) in results.enumerated() {
            if let note = result.failureNote("scenario 7, \(label), instance \(index)") { report.note(note) }
        }
        report.add(
            Figure(
                scenario: scenario, name: "accepted (2xx from wrk) per second, \(label)", value: acceptedRate, unit: "req/s",
                ratio: acceptedRate / baselines.bareStack, ratioTo: "bare stack"))
        report.add(
            Figure(
                scenario: scenario, name: "delivered (APNs 200) per second, \(label), same window", value: deliveredRate,
                unit: "push/s", ratio: deliveredRate / baselines.bareStack, ratioTo: "bare stack"))
        let worst = count == 1 ? "" : " (the highest of the \(count) wrk processes)"
        for percentile in [50.0, 99.0] {
            report.add(
                Figure(
                    scenario: scenario,
                    name: "request latency p\(Self.percentileName(percentile)) at saturation, \(label)\(worst)",
                    value: results.map { $0.milliseconds(atPercentile: percentile) }.max() ?? 0, unit: "ms"))
        }
        reportAudit(audit, accepted: accepted.count, provider: apns, scenario: scenario, label: ", \(label)")

        let delivered = deliveries.delivered
        let heraldPerNotification = heraldCPU.milliseconds(per: delivered)
        if let heraldPerNotification {
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per delivered notification, \(label) (all instances)",
                    value: heraldPerNotification, unit: "ms CPU",
                    ratio: baselines.bareCPUPerRequest.map { heraldPerNotification / $0 },
                    ratioTo: baselines.bareCPUPerRequest == nil ? nil : "bare CPU per request"))
        }
        var postgresPerNotification: Double?
        if processes.visible {
            postgresPerNotification = postgresCPU.milliseconds(per: delivered)
            let sharedPerNotification = sharedCPU.milliseconds(per: delivered)
            if let postgresPerNotification {
                report.add(
                    Figure(
                        scenario: scenario,
                        name: "PostgreSQL CPU per delivered notification, \(label) (\(processes.database.count) backends)",
                        value: postgresPerNotification, unit: "ms CPU"))
            }
            if let sharedPerNotification {
                report.add(
                    Figure(
                        scenario: scenario,
                        name: "PostgreSQL shared processes' CPU per notification, \(label) (WAL writer, checkpointer…)",
                        value: sharedPerNotification, unit: "ms CPU"))
            }
            if let heraldPerNotification, let postgresPerNotification {
                let total = heraldPerNotification + postgresPerNotification + (sharedPerNotification ?? 0)
                report.add(
                    Figure(
                        scenario: scenario, name: "Herald + PostgreSQL CPU per delivered notification, \(label)",
                        value: total, unit: "ms CPU", ratio: baselines.bareCPUPerRequest.map { total / $0 },
                        ratioTo: baselines.bareCPUPerRequest == nil ? nil : "bare CPU per request"))
            }
            if processesAfter.database != processes.database || postgresCPU.lost > 0 {
                report.note(
                    "scenario 7, \(label): the backends connected to \(database.name) changed during the window"
                        + " (\(processes.database.count) at the start, \(processesAfter.database.count) at the end,"
                        + " \(postgresCPU.lost) gone): the CPU of those that came or went is not counted in full")
            }
            if let others = othersCPU.cores, others > 0.05 {
                report.note(
                    "scenario 7, \(label): backends of other databases on the same server used"
                        + " \(String(format: "%.2f", others)) cores during the window (another user of the server)")
            }
        } else {
            report.note(
                "scenario 7: the PostgreSQL server's processes are not visible in this machine's /proc (another machine"
                    + " or a container): its CPU is not measured")
        }
        reportStatements(statementsBefore, statementsAfter, delivered: delivered, scenario: scenario, label: label)
        let scenarioCPU: [(String, Double?)] = [
            ("Herald (\(count) process\(count == 1 ? "" : "es"))", heraldCPU.cores),
            ("PostgreSQL backends of the database", processes.visible ? postgresCPU.cores : nil),
            ("PostgreSQL shared processes", processes.visible ? sharedCPU.cores : nil),
            ("bench process (the APNs double)", benchCPU.cores),
        ]
        for (what, cores) in scenarioCPU {
            if let cores {
                report.add(Figure(scenario: scenario, name: "CPU of \(what), \(label)", value: cores, unit: "cores"))
            }
        }
        let wrkCores = results.reduce(0) { $0 + $1.cpuSeconds } / window.seconds
        report.add(
            Figure(
                scenario: scenario,
                name: "CPU of wrk, \(label)" + (count == 1 ? "" : " (\(count) processes, \(threads) thread each)"),
                value: wrkCores, unit: "cores"))
        return PostgresFigures(
            accepted: acceptedRate, delivered: deliveredRate, heraldCPUPerNotification: heraldPerNotification,
            postgresCPUPerNotification: postgresPerNotification)
    }

    /// The statements PostgreSQL ran per delivered notification in the window (each one round trip from Herald), and
    /// the share of their time spent planning (issue 40: under 5 %), from `pg_stat_statements` when it is loaded.
    private func reportStatements(
        _ before: PostgresServer.StatementTotals?, _ after: PostgresServer.StatementTotals?, delivered: Int, scenario: String,
        label: String
    ) {
        guard let before, let after, delivered > 0 else {
            report.note(
                "scenario 7, \(label): pg_stat_statements is not available on the server (shared_preload_libraries and"
                    + " CREATE EXTENSION in the database the URL names): statements and planning are not measured")
            return
        }
        let window = after.since(before)
        report.add(
            Figure(
                scenario: scenario, name: "PostgreSQL statements (round trips) per delivered notification, \(label)",
                value: window.topLevelCalls / Double(delivered), unit: "statements"))
        guard let share = window.planningShare else {
            report.note("scenario 7, \(label): pg_stat_statements.track_planning is off: the planning share is not measured")
            return
        }
        report.add(
            Figure(
                scenario: scenario,
                name: "PostgreSQL planning share of its statements' time, \(label)"
                    + (window.track == "all" ? " (nested statements included)" : " (top level only: track = \(window.track))"),
                value: share * 100, unit: "%"))
    }

    /// Runs `loads[i]` against `ports[i]`, all at the same time, for `duration`; the results in the same order.
    private func runTogether(_ loads: [WrkLoad], ports: [Int], duration: Duration, label: String) async throws -> [WrkResult] {
        let wrk = self.wrk
        return try await withThrowingTaskGroup(of: (Int, WrkResult).self) { group in
            for (index, load) in loads.enumerated() {
                let port = ports[index]
                let name = loads.count == 1 ? label : "\(label), instance \(index)"
                group.addTask { (index, try await wrk.run(load, port: port, duration: duration, label: name)) }
            }
            var results: [WrkResult?] = Array(repeating: nil, count: loads.count)
            for try await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }
    }
}

/// The headline figures of one configuration of scenario 7.
struct PostgresFigures: Sendable {
    var accepted: Double
    var delivered: Double
    var heraldCPUPerNotification: Double?
    var postgresCPUPerNotification: Double?
}
