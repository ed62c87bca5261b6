import ArgumentParser
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore

/// `herald-bench [run]`: the benchmark itself.
struct RunBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the benchmark (the default subcommand).")

    @Flag(help: "The same scenarios with smaller numbers and shorter windows (under a minute).")
    var quick = false

    @Flag(help: "Print the results as JSON on standard output; progress stays on standard error.")
    var json = false

    @Option(
        help: """
            The scenarios to run, e.g. 1,2,5 (default: all of 1-6, and 7 when a PostgreSQL server is given; the \
            baselines run whenever one of 1-7 does). Scenario 1 runs three times: for APNs devices, then for FCM devices \
            on a Herald instance configured for FCM only, beside the FCM double's own limit ("1 fcm"), then for Web Push \
            devices likewise ("1 webpush"). b2 (not in \
            the default set): the APNs client, AsyncHTTPClient against Herald's own on swift-nio-http2, both driving \
            the APNs double as baseline b does; --scenarios b2 runs it alone. 8 (only when named): fairness, another \
            user's latency without and under one device's attack. 9 (only when named): activity updates, PATCH \
            /activities/{slug} over 1,000 ongoing activities to the APNs double (200 with --quick), CPU per update \
            beside scenario 1's when 1 runs too. 10 (only when named): activity fairness, another user's latency without \
            and under one device PATCHing its 50 full log activities flat out. 11 (only when named): Herald's RSS across \
            1,000 distinct Web Push endpoints. 12 (only when named): another user's APNs sends while seven Web Push \
            devices send their daily quota to a push service that never answers. 13: 1,000 scheduled sends due in the             same second, their lateness. 14: a topic of 50 devices sent to by wrk, CPU per topic send against 50 ×             scenario 1's per notification. 15: scenario 1 with HERALD_RETENTION=60 after 65 s of load (only when named).
            """)
    var scenarios: String?

    @Option(
        help: """
            The PostgreSQL server of scenario 7 (several instances on one database), e.g. \
            postgres://herald@127.0.0.1:5432/postgres; default: $HERALD_BENCH_POSTGRES_URL. Each run creates its own \
            databases there (herald_bench_…) and drops them at the end.
            """)
    var postgresURL: String?

    @Option(help: "Registered devices for scenario 5 (default 1,000,000; 20,000 with --quick).")
    var scaleDevices: Int?

    @Option(help: "Open WebSocket subscribers for scenario 4 (default 10,000; 1,000 with --quick).")
    var subscribers: Int?

    @Option(help: "Pending notifications at the crash in scenario 6 (default 100,000; 2,000 with --quick).")
    var pending: Int?

    @Option(
        help: """
            The fixed rate of scenario 2 in requests/s (default: 1,000 when scenario 1 accepted at least that many, \
            otherwise half of scenario 1's rate).
            """)
    var latencyRate: Double?

    @Option(help: "Connections of the closed-loop scenarios (wrk -c) and of the baseline (default 64).")
    var connections: Int?

    @Option(help: "wrk threads (-t), each an event loop with its share of the connections (default 2).")
    var wrkThreads: Int?

    @Option(help: "Connections of scenario 3 (wrk -c; default 1,024).")
    var multiplexConnections: Int?

    @Flag(help: "Do not run `swift build --product herald` first (use the herald binary as it is).")
    var noBuild = false

    func run() async throws {
        let clock = ContinuousClock()
        let began = clock.now
        let limits = ProcessStats.raiseOpenFileLimit()
        var plan = quick ? Plan.quick : Plan.full
        if let scaleDevices { plan.scaleDevices = scaleDevices }
        if let subscribers { plan.subscribers = subscribers }
        if let pending { plan.pending = pending }
        if let latencyRate { plan.latencyRate = latencyRate }
        plan.latencyRateIsFixed = latencyRate != nil
        if let connections { plan.clients = connections }
        if let wrkThreads { plan.wrkThreads = wrkThreads }
        if let multiplexConnections { plan.multiplexClients = multiplexConnections }
        guard plan.clients >= 1, plan.wrkThreads >= 1, plan.multiplexClients >= 1, plan.pending >= 1, plan.latencyRate > 0 else {
            throw ValidationError(
                "--connections, --wrk-threads, --multiplex-connections, --pending and --latency-rate must be positive")
        }
        let postgres = (postgresURL ?? ProcessInfo.processInfo.environment["HERALD_BENCH_POSTGRES_URL"]).flatMap {
            $0.isEmpty ? nil : $0
        }
        if let postgres {
            guard PostgresURL.isPostgres(postgres), (try? PostgresURL(postgres)) != nil else {
                throw ValidationError("--postgres-url: \(PostgresURL.redacted(postgres)) is not a postgres:// URL")
            }
        }
        var selected = Set<Int>()
        var clientComparison = false
        for text in (scenarios ?? (postgres == nil ? "1,2,3,4,5,6" : "1,2,3,4,5,6,7")).split(separator: ",") {
            let name = text.trimmingCharacters(in: .whitespaces).lowercased()
            if name == "b2" {
                clientComparison = true
            } else if let number = Int(name), (1...15).contains(number) {
                selected.insert(number)
            } else {
                throw ValidationError("--scenarios takes numbers from 1 to 15 and b2, e.g. 1,2,5 (8 to 15 only when named)")
            }
        }
        if plan.subscribers + 1_000 > Int(limits.soft), selected.contains(4) {
            throw ValidationError(
                "the open-file limit is \(limits.soft): raise it (ulimit -n \(plan.subscribers + 2_000))"
                    + " for \(plan.subscribers) WebSocket subscribers, or pass --subscribers"
            )
        }

        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Before anything else: without wrk there is no benchmark.
        let wrk = try Wrk.locate(directory: directory.appendingPathComponent("wrk"), threads: plan.wrkThreads)
        let progress = Progress.shared
        let loadGenerator = wrk.version()
        progress.line(
            "herald-bench (\(quick ? "quick" : "full")): open-file limit \(limits.soft),"
                + " scenarios \((selected.sorted().map(String.init) + (clientComparison ? ["b2"] : [])).joined(separator: ",")),"
                + " load from \(loadGenerator)"
                + " (\(wrk.executable.path))"
        )
        let binaries = try Binaries.locate(build: !noBuild, needsHerald: !selected.isEmpty)
        let apns = try await BenchAPNs.start(in: directory)
        let fcm = try await selected.contains(1) ? BenchFCM.start(in: directory) : nil
        let webPush = try await selected.contains(1) ? BenchWebPush.start(devices: plan.devices) : nil
        let report = Report()
        let bench = Bench(
            plan: plan, binaries: binaries, directory: directory, apns: apns, fcm: fcm, webPush: webPush, wrk: wrk,
            report: report)

        // The baselines are what scenarios 1-7 compare with; b2 measures its own.
        let baselines = selected.isEmpty ? nil : try await bench.baselines()
        if clientComparison { try await bench.clientComparison() }
        if let baselines {
            var context = ScenarioContext(baselines: baselines)
            if !selected.isDisjoint(with: [1, 2, 3, 4]) {
                try await bench.mainInstance(scenarios: selected, context: &context)
            }
            if selected.contains(1) { try await bench.acceptAndDeliverFCM(context: context) }
            if selected.contains(1) { try await bench.acceptAndDeliverWebPush(context: context) }
            if selected.contains(5) { try await bench.storeScale(context: context) }
            if selected.contains(6) { try await bench.recovery(baselines: baselines) }
            if selected.contains(7) { try await bench.postgres(serverURL: postgres, context: context) }
            if selected.contains(8) { try await bench.fairness(attackSize: quick ? 1_000 : 6_000, victimSends: quick ? 50 : 225) }
            if selected.contains(9) { try await bench.activityUpdates(count: quick ? 200 : 1_000, context: context) }
            if selected.contains(10) { try await bench.activityFairness(victimSends: quick ? 50 : 225, rounds: quick ? 3 : 10) }
            if selected.contains(11) { try await bench.webPushMemory(endpoints: quick ? 250 : 1_000) }
            if selected.contains(12) { try await bench.silentPushHost(attackers: 7, victimSends: quick ? 50 : 150) }
            if selected.contains(13) { try await bench.scheduledSendsDueAtOnce(count: quick ? 250 : 1_000) }
            if selected.contains(14) { try await bench.topicFanOut(members: 50, context: context) }
            if selected.contains(15) { try await bench.acceptAndDeliverWithRetention(prefill: .seconds(65), context: context) }
        }
        try? await apns.double.shutdown()
        try? await fcm?.double.shutdown()
        try? await webPush?.double.shutdown()

        let command = "swift run -c release herald-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
        let document = report.document(
            command: command.trimmingCharacters(in: .whitespaces), mode: quick ? "quick" : "full",
            openFileLimit: limits.soft, loadGenerator: loadGenerator, duration: clock.now - began)
        progress.line("")
        progress.line("Finished in \(String(format: "%.0f", (clock.now - began).seconds)) s")
        let machine = document.machine
        var summary = [
            "", "herald-bench \(document.mode), \(document.date), \(String(format: "%.0f", document.durationSeconds)) s",
            "machine: \(machine.cpus) CPUs (\(machine.cpuModel)), \(machine.memoryGiB) GiB, Linux \(machine.kernel),"
                + " open-file limit \(machine.openFileLimit)",
            "load generator: \(document.loadGenerator), \(plan.wrkThreads) threads, \(plan.clients) connections",
            "", report.table(),
        ]
        if !document.notes.isEmpty { summary += [""] + document.notes.map { "- \($0)" } }
        if json {
            // The table goes to standard error, the JSON document alone to standard output.
            for line in summary { progress.line(line) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(document), as: UTF8.self))
        } else {
            for line in summary { print(line) }
        }
    }
}

/// Runs the scenarios; each adds its figures to the report.
final class Bench: Sendable {
    let plan: Plan
    let binaries: Binaries
    let directory: URL
    let apns: BenchAPNs
    /// The FCM double, when scenario 1 runs.
    let fcm: BenchFCM?
    /// The push-service double, when scenario 1 runs (its run for Web Push devices).
    let webPush: BenchWebPush?
    let wrk: Wrk
    let report: Report

    init(
        plan: Plan, binaries: Binaries, directory: URL, apns: BenchAPNs, fcm: BenchFCM?, webPush: BenchWebPush? = nil, wrk: Wrk,
        report: Report
    ) {
        self.webPush = webPush
        self.plan = plan
        self.binaries = binaries
        self.directory = directory
        self.apns = apns
        self.fcm = fcm
        self.wrk = wrk
        self.report = report
    }

    /// Starts `herald serve` (the release binary) on a SQLite file, pointed at `provider`'s double (by default the APNs
    /// double) and configured for that provider only.
    func startHerald(
        _ name: String, database: String, provider: (any BenchProvider)? = nil, environment extra: [String: String] = [:]
    ) throws -> ChildProcess {
        // Herald's own options are the benchmark's to set; only the log options and the delivery slots pass through
        // (to compare, e.g., HERALD_ACCESS_LOG=off with the default, or to size HERALD_DELIVERY_CONCURRENCY).
        let passedThrough: Set<String> = ["HERALD_ACCESS_LOG", "HERALD_LOG_FORMAT", "HERALD_DELIVERY_CONCURRENCY"]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") || passedThrough.contains($0.key) }
        environment.merge(
            [
                "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_LOG_LEVEL": "info",
                "HERALD_DATABASE_URL": database,
                // The benchmark sends many notifications to few devices; the quota is still counted as usual.
                "HERALD_RATE_LIMIT_DAILY": "10000000",
                // A slow double or a WebSocket scenario can leave more than the default 1,000 pending per device.
                "HERALD_MAX_PENDING_PER_DEVICE": "10000000",
                // It registers thousands of devices from one address.
                "HERALD_REGISTRATIONS_PER_MINUTE": "0",
                // and opens thousands of connections (10,000 WebSocket subscribers in scenario 4) from it, as before
                // these caps existed.
                "HERALD_MAX_CONNECTIONS_PER_ADDRESS": "0", "HERALD_HTTP_RESERVED_CONNECTIONS": "0",
            ].merging((provider ?? apns).heraldEnvironment) { first, _ in first }
        ) { _, new in new }
        environment.merge(extra) { _, new in new }
        return try ChildProcess(name: name, executable: binaries.herald, arguments: ["serve"], environment: environment)
    }

    func databasePath(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Waits until the double has answered `200` `target` times in all, or `timeout`; returns the wait.
    func waitForDeliveries(reaching target: Int, timeout: Duration, label: String) async -> (Duration, reached: Bool) {
        let clock = ContinuousClock()
        let start = clock.now
        while apns.delivered < target, clock.now - start < timeout {
            Progress.shared.status("\(label): \(Format.grouped(Double(target - apns.delivered))) notifications still to deliver")
            try? await Task.sleep(for: .milliseconds(20))
        }
        Progress.shared.endStatus()
        return (clock.now - start, apns.delivered >= target)
    }
}

extension Bench {
    /// Waits until the double has answered `200` for every one of `ids` since `ledger` started, or `timeout`; returns
    /// the wait and how many are still missing.
    func waitForDistinctDeliveries(
        of ids: Set<String>, in ledger: any DeliveryLedger, timeout: Duration, label: String
    ) async throws -> (Duration, missing: Int) {
        let clock = ContinuousClock()
        let start = clock.now
        var missing = try ledger.missing(from: ids)
        while missing > 0, clock.now - start < timeout {
            Progress.shared.status("\(label): \(Format.grouped(Double(missing))) notifications still to deliver")
            try? await Task.sleep(for: .milliseconds(50))
            missing = try ledger.missing(from: ids)
        }
        Progress.shared.endStatus()
        return (clock.now - start, missing)
    }
}

/// What became of the notifications a scenario had answered 2xx: each must reach the double exactly once.
struct DeliveryAudit {
    /// How long after the load the last of them arrived.
    var drain: Duration
    /// Answered 2xx, never delivered.
    var lost: Int
    /// A second `200` for one notification.
    var duplicates: Int
    /// Distinct notifications delivered (some may have been accepted without wrk reading the answer).
    var delivered: Int
}

extension Bench {
    /// Drains the deliveries of `accepted` (up to 60 s, then 2 s more for a late duplicate), stops `ledger` and counts
    /// what was lost and delivered twice. Notes inconsistencies under `context`.
    func auditDeliveries(
        of accepted: Set<String>, answered2xx: Int, ledger: any DeliveryLedger, context: String
    ) async throws -> DeliveryAudit {
        if accepted.count != answered2xx {
            report.note("\(context): \(answered2xx) answers were 2xx but \(accepted.count) distinct notification ids were read")
        }
        let (drain, missing) = try await waitForDistinctDeliveries(
            of: accepted, in: ledger, timeout: .seconds(60), label: "draining")
        if missing > 0 {
            report.note("\(context): \(missing) accepted notifications were not delivered within 60 s of the end of the load")
        }
        try? await Task.sleep(for: .seconds(2))  // a late duplicate would show here
        let (delivered, answers) = try ledger.stop()
        return DeliveryAudit(
            drain: drain, lost: accepted.count { !delivered.contains($0) }, duplicates: answers - delivered.count,
            delivered: delivered.count)
    }

    /// The duplicate and lost figures of an audit of deliveries to `provider` (target 0 each).
    func reportAudit(_ audit: DeliveryAudit, accepted: Int, provider: any BenchProvider, scenario: String, label: String) {
        report.add(
            Figure(
                scenario: scenario, name: "duplicate deliveries (\(provider.duplicateMeaning))\(label)",
                value: Double(audit.duplicates), unit: "push", ratio: Double(audit.duplicates) / Double(max(1, audit.delivered)),
                ratioTo: "of \(Format.grouped(Double(audit.delivered))) delivered", target: "0", met: audit.duplicates == 0))
        report.add(
            Figure(
                scenario: scenario, name: "lost (accepted, never delivered)\(label)", value: Double(audit.lost), unit: "notif",
                ratio: Double(audit.lost) / Double(max(1, accepted)),
                ratioTo: "of \(Format.grouped(Double(accepted))) accepted", target: "0", met: audit.lost == 0))
    }
}

extension Bench {
    /// Delivered/s and Herald's CPU per notification of another accept-and-deliver run as ratios to scenario 1's
    /// (APNs devices, SQLite); `what` names the run and `reference` scenario 1 in the figures' names.
    func reportAgainstScenario1(
        _ scenario1: AcceptAndDeliverFigures, delivered: Double, cpuPerNotification: Double?, scenario: String,
        what: String, reference: String
    ) {
        report.add(
            Figure(
                scenario: scenario, name: "delivered/s, \(what) against \(reference) (scenario 1)", value: delivered,
                unit: "push/s", ratio: delivered / scenario1.delivered,
                ratioTo: "\(reference) (\(Format.grouped(scenario1.delivered)) push/s)"))
        if let cpuPerNotification, let referenceCPU = scenario1.heraldCPUPerNotification {
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per notification, \(what) against \(reference)",
                    value: cpuPerNotification, unit: "ms CPU", ratio: cpuPerNotification / referenceCPU,
                    ratioTo: "\(reference) (\(String(format: "%.3f", referenceCPU)) ms)"))
        }
    }
}

extension ClosedLoopResult {
    /// A note for the report when some requests failed.
    func failureNote(_ what: String) -> String? {
        guard failed > 0 else { return nil }
        return "\(what): \(failed) requests failed; first: \(firstFailure ?? "?")"
    }
}
