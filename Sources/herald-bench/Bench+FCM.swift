import Foundation
import HeraldCore
import HeraldTesting

extension Bench {
    /// Scenario 1 for FCM devices: the FCM double's own limit (a bare HTTP/2 client, as baseline b is for APNs), then
    /// scenario 1's load, the same wrk run and bodies, on a Herald instance configured for FCM only (no APNs) on a fresh
    /// store, with `plan.devices` FCM devices registered over HTTP; beside scenario 1's APNs figures when they were
    /// measured in the same run.
    func acceptAndDeliverFCM(context: ScenarioContext) async throws {
        guard let fcm else { return }
        let scenario = "1 fcm"
        let baselines = context.baselines
        Progress.shared.phase(
            "Scenario 1 (FCM): the FCM double's own limit, bare HTTP/2 client (1 client, 256 requests in flight)")
        let before = fcm.double.counters
        let doubleRate = try await doubleLimit(fcm, scenario: scenario) { cpu in
            try await FCMBaseline.measure(
                fcm, connections: 1, inFlight: 256, warmup: plan.warmup, duration: plan.measure, cpu: cpu)
        }
        let afterBaseline = fcm.double.counters

        Progress.shared.phase(
            "Scenario 1 (FCM): Herald configured for FCM only, fresh store, register \(plan.devices) FCM devices over HTTP")
        let store = databasePath("fcm.sqlite")
        let herald = try startHerald("herald (FCM)", database: store, provider: fcm)
        let figures: AcceptAndDeliverFigures
        do {
            let (port, _) = try await herald.waitUntilListening()
            let (devices, _) = await registerDevices(port: port, platform: .fcm, salt: "fcm")
            guard !devices.isEmpty else {
                report.note("scenario 1 (FCM): no FCM device could be registered; not measured. Herald's output:\n\(herald.log)")
                await herald.stop()
                return
            }
            figures = try await acceptAndDeliver(
                herald: herald, port: port, bodies: devices.map { $0.notifyBody() }, provider: fcm, doubleLimit: doubleRate,
                store: store, scenario: scenario, baselines: baselines)
        } catch {
            await herald.stop()
            throw error
        }
        let status = await herald.stop()
        let after = fcm.double.counters
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        report.note(
            "scenario 1 (FCM): the FCM double accepted"
                + " \(count(afterBaseline.connections - before.connections, "connection")) from the baseline's client and"
                + " \(count(after.connections - afterBaseline.connections, "connection")) from Herald (each carries at most"
                + " \(FCMDouble.maxConcurrentStreams) streams at a time), and issued Herald"
                + " \(count(after.tokensIssued - afterBaseline.tokensIssued, "access token"))")
        if status != 0 {
            report.note("herald (FCM) did not exit cleanly on SIGTERM (status \(status.map(String.init) ?? "none"))")
        }

        if let apns = context.sqlite {
            reportAgainstScenario1(
                apns, delivered: figures.delivered, cpuPerNotification: figures.heraldCPUPerNotification, scenario: scenario,
                what: "FCM devices", reference: "APNs devices")
        }
    }
}
