import Foundation
import HeraldCore
import HeraldTesting
import Histogram
import NIOCore

extension Bench {
    /// Scenarios 1-4 on one Herald instance with a fresh store and the production defaults
    /// (`HERALD_DELIVERY_WAIT_MS` 500, `HERALD_DELIVERY_CONCURRENCY` 1,024, 2 APNs connections).
    func mainInstance(scenarios: Set<Int>, context: inout ScenarioContext) async throws {
        let baselines = context.baselines
        Progress.shared.phase("Herald: start on a fresh store, register \(plan.devices) devices over HTTP")
        let herald = try startHerald("herald", database: databasePath("main.sqlite"))
        let (port, startup) = try await herald.waitUntilListening()
        try await Task.sleep(for: .seconds(2))
        let idleRSS = ProcessStats.residentBytes(of: herald.pid) ?? 0
        if scenarios.contains(4) {
            report.add(
                Figure(
                    scenario: "4 memory", name: "Herald idle RSS (fresh start)", value: Double(idleRSS) / 1_048_576,
                    unit: "MB", ratio: Double(idleRSS) / Double(baselines.bareIdleRSS), ratioTo: "bare idle",
                    target: "≤ 1.25 × bare idle", met: Double(idleRSS) <= 1.25 * Double(baselines.bareIdleRSS)))
        }
        Progress.shared.line("  herald listening on \(port) after \(String(format: "%.0f", startup.milliseconds)) ms")

        let (devices, registration) = await registerDevices(port: port, platform: .apns, salt: "main")
        context.registrationRate = registration.perSecond
        report.add(
            Figure(
                scenario: "5 store scale", name: "registrations over HTTP, empty store, \(plan.clients) clients",
                value: registration.perSecond, unit: "req/s", ratio: registration.perSecond / baselines.bareStack,
                ratioTo: "bare stack"))
        guard !devices.isEmpty else {
            report.note("no device could be registered; scenarios 1-4 skipped. Herald's output:\n\(herald.log)")
            await herald.stop()
            return
        }
        let bodies = devices.map { $0.notifyBody() }

        if scenarios.contains(1) || scenarios.contains(4) {
            let figures = try await acceptAndDeliver(
                herald: herald, port: port, bodies: bodies, provider: apns, doubleLimit: baselines.double,
                store: databasePath("main.sqlite"), scenario: "1 accept+deliver", baselines: baselines)
            context.acceptRate = figures.accepted
            context.sqlite = figures
            report.add(
                Figure(
                    scenario: "4 memory", name: "Herald peak RSS under scenario 1", value: Double(figures.peakRSS) / 1_048_576,
                    unit: "MB", ratio: Double(figures.peakRSS) / Double(baselines.bareIdleRSS), ratioTo: "bare idle"))
        }
        if scenarios.contains(2) {
            try await latency(herald: herald, port: port, bodies: bodies, acceptRate: context.acceptRate)
        }
        if scenarios.contains(3) {
            try await multiplexing(port: port, bodies: bodies)
        }
        if scenarios.contains(4) {
            await webSocketMemory(herald: herald, port: port, baselines: baselines)
        }
        let status = await herald.stop()
        if status != 0 { report.note("herald did not exit cleanly on SIGTERM (status \(status.map(String.init) ?? "none"))") }
    }

    /// Registers `plan.devices` devices of `platform` over HTTP on the instance at `port`, `plan.clients` at a time.
    func registerDevices(
        port: Int, platform: Platform, salt: String
    ) async -> (devices: [DeviceIdentity], result: ClosedLoopResult) {
        let client = LoadClient(port: port, connections: plan.clients)
        let (devices, registration) = await Registration.register(
            count: plan.devices, concurrency: plan.clients, platform: platform, client: client, salt: salt,
            label: "register \(platform.rawValue) devices")
        await client.shutdown()
        if let note = registration.failureNote("\(platform.rawValue) registration") { report.note(note) }
        return (devices, registration)
    }

    /// Scenario 1: `/api/push/notify` from wrk at full speed (`plan.clients` connections), cycling through the registered
    /// devices, which `provider`'s double serves; accepted/s, delivered/s at the double, CPU per notification,
    /// duplicates and lost notifications. `doubleLimit` is the double's own limit; `store` the instance's SQLite file.
    func acceptAndDeliver(
        herald: ChildProcess, port: Int, bodies: [ByteBuffer], provider: any BenchProvider, doubleLimit: Double,
        store: String, scenario: String, baselines: Baselines
    ) async throws -> AcceptAndDeliverFigures {
        let context = "scenario 1 (\(provider.name))"
        Progress.shared.phase(
            "Scenario 1 (\(provider.name)): accept and deliver, wrk, \(plan.clients) connections, \(bodies.count) devices")
        let ledger = provider.startLedger(store: store)
        let load = try wrk.load(
            "scenario-1-\(provider.platform.rawValue)", path: "/api/push/notify", bodies: bodies, connections: plan.clients,
            keepIDs: true)
        let deliveries = DeliveryWindow(provider)
        let heraldCPU = CPUWindow(pid: herald.pid)
        let benchCPU = CPUWindow(pid: 0)
        let sampler = MemorySampler(pid: herald.pid)
        let (warmup, result) = try await wrk.run(
            load, port: port, warmup: plan.warmup, duration: plan.measure, label: "accept+deliver",
            observers: [heraldCPU, benchCPU, deliveries])
        let peakRSS = sampler.stop()

        // Every notification answered 201, warm-up included, must reach the double exactly once.
        let accepted = Set((warmup?.ids ?? []) + result.ids)
        let audit = try await auditDeliveries(
            of: accepted, answered2xx: (warmup?.succeeded ?? 0) + result.succeeded, ledger: ledger, context: context)
        let unanswered = audit.delivered - (accepted.count - audit.lost)
        let delivered = Double(deliveries.delivered) / result.window.seconds

        if let note = result.failureNote(context) { report.note(note) }
        report.add(
            Figure(
                scenario: scenario, name: "accepted (2xx from wrk) per second", value: result.perSecond, unit: "req/s",
                ratio: result.perSecond / baselines.bareStack, ratioTo: "bare stack", target: "≥ 0.25 × bare stack",
                met: result.perSecond >= 0.25 * baselines.bareStack))
        report.add(
            Figure(
                scenario: scenario, name: "delivered (\(provider.name) \(provider.successStatus)) per second, same window", value: delivered,
                unit: "push/s", ratio: delivered / baselines.bareStack, ratioTo: "bare stack", target: "≥ 0.25 × bare stack",
                met: delivered >= 0.25 * baselines.bareStack))
        for percentile in [50.0, 99.0] {
            report.add(
                Figure(
                    scenario: scenario, name: "request latency p\(Self.percentileName(percentile)) at saturation (wrk)",
                    value: result.milliseconds(atPercentile: percentile), unit: "ms"))
        }
        reportAudit(audit, accepted: accepted.count, provider: provider, scenario: scenario, label: "")
        if unanswered > 0 {
            report.note(
                "\(context): \(unanswered) notifications were delivered whose answer wrk never read"
                    + " (in flight when a wrk run ended); they are not counted as accepted")
        }
        heraldCPU.report(into: report, scenario: scenario, what: "Herald")
        let heraldCPUPerNotification = heraldCPU.milliseconds(per: deliveries.delivered)
        if let perNotification = heraldCPUPerNotification {
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per delivered notification (user+system)",
                    value: perNotification, unit: "ms CPU", ratio: baselines.bareCPUPerRequest.map { perNotification / $0 },
                    ratioTo: baselines.bareCPUPerRequest == nil ? nil : "bare CPU per request"))
        }
        benchCPU.report(into: report, scenario: scenario, what: "bench process (the \(provider.name) double)")
        reportGenerator(result, into: scenario)
        if audit.drain > .milliseconds(100) {
            report.note(
                "\(context): the last deliveries arrived \(String(format: "%.1f", audit.drain.seconds)) s after the load stopped")
        }
        if delivered >= 0.8 * doubleLimit {
            report.note(
                "\(context): delivered/s is \(Format.ratio(delivered / doubleLimit)) of the \(provider.name) double's own"
                    + " limit: the double (in the bench process) was the bottleneck or close to it"
            )
        } else {
            report.note(
                "\(context): the \(provider.name) double was not the bottleneck"
                    + " (delivered/s is \(Format.ratio(delivered / doubleLimit)) of its own limit)"
            )
        }
        return AcceptAndDeliverFigures(
            accepted: result.perSecond, delivered: delivered, heraldCPUPerNotification: heraldCPUPerNotification,
            peakRSS: peakRSS)
    }

    /// Scenario 2: an open loop at a fixed rate from wrk, each connection on a fixed schedule (``WrkScript``); request
    /// latency from the actual send, the sends that slipped behind the schedule, and send-to-APNs-200 latency (matched
    /// by apns-id = notification id).
    private func latency(herald: ChildProcess, port: Int, bodies: [ByteBuffer], acceptRate: Double?) async throws {
        var rate = plan.latencyRate
        if !plan.latencyRateIsFixed, let acceptRate, acceptRate < rate {
            // Open loop above the capacity only measures a queue that grows; half of it still says something.
            rate = max(50, (acceptRate * 0.5 / 50).rounded(.down) * 50)
            report.note(
                "scenario 2: scenario 1 accepted \(Format.grouped(acceptRate))/s,"
                    + " less than \(Format.grouped(plan.latencyRate))/s: the fixed rate was lowered to"
                    + " \(Format.grouped(rate))/s (half of that), so the target was not measured"
            )
        }
        let connections = plan.latencyConnections
        let interval = Double(connections) / rate * 1_000  // ms between two sends of one connection
        Progress.shared.phase(
            "Scenario 2: latency at \(Format.grouped(rate))/s, open loop, wrk, \(connections) connections each sending"
                + " every \(String(format: "%.1f", interval)) ms, \(String(format: "%.0f", plan.latencyDuration.seconds)) s")
        let load = try wrk.load(
            "scenario-2", path: "/api/push/notify", bodies: bodies, connections: connections, keepIDs: true, rate: rate)
        let heraldCPU = CPUWindow(pid: herald.pid)
        let benchCPU = CPUWindow(pid: 0)
        let ledger = APNsLedger(apns)
        let (_, result) = try await wrk.run(
            load, port: port, warmup: plan.warmup, duration: plan.latencyDuration, label: "fixed rate",
            observers: [heraldCPU, benchCPU])
        let sends = result.sends
        let (_, missing) = try await waitForDistinctDeliveries(
            of: Set(sends.map(\.id)), in: ledger, timeout: .seconds(30), label: "draining")
        let answered = apns.recorder.stop()
        let clock = ScriptClock.Converter()
        var endToEnd = LatencyHistogram.latency()
        var fromSchedule = LatencyHistogram.latency()
        var lag = LatencyHistogram.latency()
        for send in sends {
            fromSchedule.record(.microseconds(send.answered - send.due))
            lag.record(.microseconds(send.sent - send.due))
            if let at = answered[send.id] { endToEnd.record(.microseconds(clock.microseconds(at: at) - send.sent)) }
        }
        // 2xx per second from the first scheduled send until the first connection stopped (wrk stops its threads
        // one by one, within 100 ms of the end).
        let lastAnswers = Dictionary(grouping: sends, by: \.connection).values.compactMap { $0.map(\.answered).max() }
        let windowEnd = lastAnswers.min() ?? 0
        let span = (windowEnd - (sends.map(\.due).min() ?? windowEnd)) / 1_000_000
        let achieved = span > 0 ? Double(sends.count { $0.answered <= windowEnd }) / span : 0

        let scenario = "2 latency"
        if let note = result.failureNote("scenario 2") { report.note(note) }
        report.add(
            Figure(
                scenario: scenario, name: "achieved rate (2xx/s from the first scheduled send)", value: achieved,
                unit: "req/s", ratio: achieved / rate, ratioTo: "\(Format.grouped(rate))/s asked"))
        for percentile in [50.0, 99.0, 99.9] {
            let value = result.milliseconds(atPercentile: percentile)
            report.add(
                Figure(
                    scenario: scenario,
                    name:
                        "request latency p\(Self.percentileName(percentile)) at \(Format.grouped(rate))/s open loop"
                        + " (wrk, from actual send)",
                    value: value, unit: "ms", target: percentile == 99 ? "≤ 5 ms at 1,000/s" : nil,
                    met: percentile == 99 ? value <= 5 && rate >= 1_000 && result.lateSends == 0 : nil)
            )
        }
        report.add(
            Figure(
                scenario: scenario,
                name: "requests sent late (previous answer on the connection slower than its \(Format.grouped(interval)) ms)",
                value: Double(result.lateSends), unit: "req", ratio: Double(result.lateSends) / Double(max(1, result.requests)),
                ratioTo: "of \(Format.grouped(Double(result.requests))) answered", target: "0", met: result.lateSends == 0))
        if result.lateSends > 0 {
            report.note(
                "scenario 2: \(result.lateSends) requests were sent late, up to"
                    + " \(String(format: "%.1f", result.maxSlipMicroseconds / 1_000)) ms after their scheduled time,"
                    + " because the previous answer on their connection came after that (it took more than about"
                    + " \(Format.grouped(interval)) ms): the latency from the actual send understates what a client sending"
                    + " at \(Format.grouped(rate))/s would see (coordinated omission), and the target does not count as met;"
                    + " from the scheduled send, p99 is"
                    + " \(String(format: "%.2f", fromSchedule.milliseconds(atPercentile: 99))) ms")
        }
        report.add(
            Figure(
                scenario: scenario, name: "wrk send behind schedule p99 (timer granularity 1 ms)",
                value: lag.milliseconds(atPercentile: 99), unit: "ms"))
        for percentile in [50.0, 99.0, 99.9] {
            report.add(
                Figure(
                    scenario: scenario, name: "send to APNs 200 p\(Self.percentileName(percentile))",
                    value: endToEnd.milliseconds(atPercentile: percentile), unit: "ms"))
        }
        if missing > 0 {
            report.note("scenario 2: \(missing) of \(sends.count) accepted notifications had no APNs 200 within 30 s")
        }
        heraldCPU.report(into: report, scenario: scenario, what: "Herald")
        benchCPU.report(into: report, scenario: scenario, what: "bench process (the APNs double)")
        reportGenerator(result, into: scenario)
    }

    static func percentileName(_ percentile: Double) -> String {
        percentile == percentile.rounded() ? String(Int(percentile)) : String(percentile)
    }

    /// Scenario 3: the double adds 50 ms to every answer; delivered/s compared with no delay, same instance, same load
    /// (wrk, `plan.multiplexClients` connections).
    private func multiplexing(port: Int, bodies: [ByteBuffer]) async throws {
        let connections = plan.multiplexClients
        Progress.shared.phase("Scenario 3: multiplexing, wrk, \(connections) connections, APNs answers after 0 ms then 50 ms")
        let load = try wrk.load("scenario-3", path: "/api/push/notify", bodies: bodies, connections: connections)
        var rates: [Duration: (accepted: Double, delivered: Double)] = [:]
        for delay in [Duration.zero, .milliseconds(50)] {
            apns.double.setResponseDelay(delay == .zero ? nil : delay)
            let deliveries = DeliveryWindow(apns)
            let (_, result) = try await wrk.run(
                load, port: port, warmup: plan.warmup, duration: plan.multiplexDuration,
                label: "delay \(Int(delay.milliseconds)) ms", observers: [deliveries])
            rates[delay] = (result.perSecond, Double(deliveries.delivered) / result.window.seconds)
            if let note = result.failureNote("scenario 3, \(Int(delay.milliseconds)) ms") { report.note(note) }
            _ = await waitForDeliveries(reaching: apns.delivered, timeout: .seconds(1), label: "settling")
            try? await Task.sleep(for: .milliseconds(500))
        }
        apns.double.setResponseDelay(nil)
        let fast = rates[.zero]!
        let slow = rates[.milliseconds(50)]!
        report.add(
            Figure(scenario: "3 multiplexing", name: "delivered/s, APNs answers at once", value: fast.delivered, unit: "push/s"))
        report.add(
            Figure(
                scenario: "3 multiplexing", name: "delivered/s, APNs answers after 50 ms", value: slow.delivered,
                unit: "push/s", ratio: slow.delivered / fast.delivered, ratioTo: "zero delay", target: "≥ 0.8 × zero delay",
                met: slow.delivered >= 0.8 * fast.delivered))
    }

    /// Scenario 4 (the rest): resident memory with many open WebSocket subscribers.
    private func webSocketMemory(herald: ChildProcess, port: Int, baselines: Baselines) async {
        let count = plan.subscribers
        Progress.shared.phase("Scenario 4: \(Format.grouped(Double(count))) WebSocket subscribers")
        let client = LoadClient(port: port, connections: plan.clients)
        let (devices, registration) = await Registration.register(
            count: count, concurrency: plan.clients, platform: .websocket, client: client, salt: "ws",
            label: "register websocket devices")
        await client.shutdown()
        if let note = registration.failureNote("websocket registration") { report.note(note) }
        // Herald gives freed heap memory back every 5 s (HeapTrimmer): both readings come after two of those.
        try? await Task.sleep(for: .seconds(11))
        let before = ProcessStats.residentBytes(of: herald.pid) ?? 0
        let threadsBefore = ProcessStats.threads(of: herald.pid) ?? 0
        let subscribers = WebSocketSubscribers()
        await subscribers.open(port: port, devices: devices, connecting: 128, timeout: .seconds(120))
        try? await Task.sleep(for: .seconds(11))
        let after = ProcessStats.residentBytes(of: herald.pid) ?? 0
        let threadsAfter = ProcessStats.threads(of: herald.pid) ?? 0
        let open = subscribers.subscribedCount
        if subscribers.failedCount > 0 {
            report.note(
                "scenario 4: \(subscribers.failedCount) WebSocket subscriptions failed; first: \(subscribers.failure ?? "?")")
        }
        report.add(
            Figure(
                scenario: "4 memory", name: "Herald RSS before the subscribers", value: Double(before) / 1_048_576, unit: "MB",
                ratio: Double(before) / Double(baselines.bareIdleRSS), ratioTo: "bare idle"))
        report.add(
            Figure(
                scenario: "4 memory", name: "Herald RSS with \(Format.grouped(Double(open))) subscribers",
                value: Double(after) / 1_048_576, unit: "MB", ratio: Double(after) / Double(baselines.bareIdleRSS),
                ratioTo: "bare idle"))
        report.add(
            Figure(
                scenario: "4 memory", name: "Herald threads before / with the subscribers", value: Double(threadsAfter),
                unit: "threads", ratio: Double(threadsAfter) / Double(max(1, threadsBefore)), ratioTo: "\(threadsBefore) before"))
        if open > 0 {
            let perSocket = Double(after - before) / Double(open) / 1_024
            report.add(
                Figure(
                    scenario: "4 memory", name: "RSS per idle subscribed socket", value: perSocket, unit: "KB",
                    target: "≤ 20 KB", met: perSocket <= 20))
        }
        await subscribers.close()
        // What stays after the clients leave, and whether a second round of the same clients adds to it (it would if
        // something were kept per connection).
        try? await Task.sleep(for: .seconds(11))
        let left = ProcessStats.residentBytes(of: herald.pid) ?? 0
        let again = WebSocketSubscribers()
        await again.open(port: port, devices: devices, connecting: 128, timeout: .seconds(120))
        await again.close()
        try? await Task.sleep(for: .seconds(11))
        let leftAgain = ProcessStats.residentBytes(of: herald.pid) ?? 0
        report.add(
            Figure(
                scenario: "4 memory", name: "Herald RSS after the subscribers left", value: Double(left) / 1_048_576,
                unit: "MB", ratio: Double(left) / Double(max(1, before)), ratioTo: "before them"))
        if again.subscribedCount > 0 {
            report.add(
                Figure(
                    scenario: "4 memory",
                    name: "RSS added by a second round of \(Format.grouped(Double(again.subscribedCount))) subscribers, per socket",
                    value: (Double(leftAgain) - Double(left)) / Double(again.subscribedCount) / 1_024, unit: "KB"))
        }
    }
}
