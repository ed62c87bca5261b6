import Foundation
import HeraldCore
import HeraldTesting
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

extension Bench {
    /// Herald's options while scenario 6 fills the outbox, on top of the usual ones. The APNs double stalls every
    /// request (accepts the stream, never answers), so the one delivery attempt Herald may have in flight hangs until the
    /// crash, and every other notification stays pending in the store: no answers, hence no retries and no back-off.
    /// The notify answer does not wait for a first attempt that cannot finish.
    static let fillEnvironment = [
        "HERALD_INSTANCE_ID": instanceID,
        "HERALD_DELIVERY_WAIT_MS": "0",
        "HERALD_DELIVERY_CONCURRENCY": "1",
        // The longest deadline Herald allows: a fill shorter than this sees no timeout, hence no retry.
        "HERALD_APNS_TIMEOUT": "120",
    ]

    /// Both Herald processes of scenario 6 run under this name, as a deployment that restarts on the same port does
    /// (the default name is `HOSTNAME:PORT`; the benchmark listens on port 0, whose default name is random): the
    /// restarted process takes the killed one's leases back at once instead of waiting for them to expire.
    static let instanceID = "bench-recovery"

    /// Scenario 6: `plan.pending` notifications accepted while APNs stalls (wrk stops at that many 201s), `kill -9`,
    /// a restart on the same store with APNs healthy, and the time until every pending notification was delivered.
    func recovery(baselines: Baselines) async throws {
        let pending = plan.pending
        let scenario = "6 recovery"
        Progress.shared.phase(
            "Scenario 6: recovery, \(Format.grouped(Double(pending))) pending notifications (APNs stalls), kill -9,"
                + " restart with APNs healthy")
        let store = try await Seeder.seed(
            path: databasePath("recovery.sqlite"), count: 1_000, salt: "recovery", label: "seed 1,000 devices")
        let bodies = (0..<store.count).map { DeviceIdentity.seeded($0, salt: store.salt).identity.notifyBody() }
        let load = try wrk.load(
            "scenario-6-fill", path: "/api/push/notify", bodies: bodies, connections: plan.clients, stopAfter: pending)

        apns.double.stallNext(1_000_000_000)
        let first = try startHerald("herald (before the crash)", database: store.path, environment: Self.fillEnvironment)
        let (port, _) = try await first.waitUntilListening()
        // wrk stops at `pending` 2xx; the duration is only a limit (a fill slower than 200/s is a finding of its own).
        let limit = Duration.seconds(max(60, pending / 200))
        let fill = try await wrk.run(load, port: port, duration: limit, label: "fill while APNs stalls")
        if let note = fill.failureNote("scenario 6 fill") { report.note(note) }
        report.add(
            Figure(
                scenario: scenario, name: "accepted/s while APNs stalls (the fill, wrk)", value: fill.perSecond,
                unit: "req/s", ratio: fill.perSecond / baselines.bareStack, ratioTo: "bare stack"))
        report.add(Figure(scenario: scenario, name: "fill time", value: fill.duration, unit: "s"))
        if fill.succeeded < pending {
            report.note(
                "scenario 6: the fill stopped at its limit of \(Int(limit.seconds)) s with \(fill.succeeded)"
                    + " of \(pending) notifications accepted")
        }
        first.signal(SIGKILL)
        _ = await first.waitForExit()
        let (due, leased) = try Seeder.pendingNotifications(path: store.path, restartingOwner: Self.instanceID)
        report.add(
            Figure(
                scenario: scenario, name: "pending after kill -9 (read from the SQLite file)", value: Double(due.count),
                unit: "notif"))
        if leased > 0 {
            report.add(
                Figure(
                    scenario: scenario, name: "of the pending, leased by the killed instance (taken back at the restart)",
                    value: Double(leased), unit: "notif"))
        }
        if due.count < fill.succeeded {
            report.note("scenario 6: only \(due.count) of \(fill.succeeded) accepted notifications were pending at the crash")
        }
        guard !due.isEmpty else {
            report.note("scenario 6: nothing was pending at the crash; the restart was not measured")
            return
        }

        apns.double.clearFaults()
        apns.recorder.start()
        let restartedAt = Date()
        let second = try startHerald(
            "herald (after the crash)", database: store.path, environment: ["HERALD_INSTANCE_ID": Self.instanceID])
        let (_, startup) = try await second.waitUntilListening()
        let listening = second.startedAt + startup
        let dueAtRestart = due.prefix { $0 <= restartedAt }.count
        let clock = ContinuousClock()
        let deadline = clock.now + plan.drainTimeout
        var delivered = apns.recorder.count
        while delivered < due.count, clock.now < deadline {
            Progress.shared.status(
                "draining: \(Format.grouped(Double(delivered))) of \(Format.grouped(Double(due.count))) delivered")
            try? await Task.sleep(for: .milliseconds(50))
            delivered = apns.recorder.count
        }
        Progress.shared.endStatus()
        let answered = apns.recorder.stop().values.sorted()
        await second.stop()
        if dueAtRestart < due.count {
            report.add(
                Figure(
                    scenario: scenario, name: "of the pending, due at the restart (the rest wait for a back-off or a lease)",
                    value: Double(dueAtRestart), unit: "notif"))
        }
        report.add(Figure(scenario: scenario, name: "restart to listening", value: startup.milliseconds, unit: "ms"))
        if answered.count >= due.count, let last = answered.last {
            let drain = (last - second.startedAt).seconds
            report.add(
                Figure(
                    scenario: scenario, name: "restart to every pending notification delivered", value: drain, unit: "s",
                    target: "≤ 30 s", met: drain <= 30))
        } else {
            report.add(
                Figure(
                    scenario: scenario,
                    name: "pending delivered within \(Int(plan.drainTimeout.seconds)) s of the restart",
                    value: Double(answered.count), unit: "notif", ratio: Double(answered.count) / Double(max(1, due.count)),
                    ratioTo: "of \(Format.grouped(Double(due.count))) pending", target: "all within 30 s", met: false))
        }
        // The drain rate of what could be attempted at once (the rest waits for its back-off or lease, not for Herald).
        if dueAtRestart > 0, answered.count >= dueAtRestart {
            let drained = answered[dueAtRestart - 1]
            if dueAtRestart < due.count {
                report.add(
                    Figure(
                        scenario: scenario, name: "restart to the part due at the restart delivered",
                        value: (drained - second.startedAt).seconds, unit: "s"))
            }
            report.add(
                Figure(
                    scenario: scenario, name: "drain rate of the part due at the restart",
                    value: Double(dueAtRestart) / (drained - listening).seconds, unit: "push/s"))
        }
        if let lastDue = due.last, lastDue > restartedAt {
            report.note(
                "scenario 6: \(due.count - dueAtRestart) pending notifications could not be attempted at the restart"
                    + " (a retry back-off or a lease of the killed instance),"
                    + String(format: " the last one until %.1f s after the restart", lastDue.timeIntervalSince(restartedAt)))
        }
    }
}
