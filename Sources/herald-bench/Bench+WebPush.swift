import Foundation
import HeraldCore
import HeraldTesting

extension Bench {
    /// Scenario 1 for Web Push devices: the push-service double's own limit (a bare client sending messages encrypted
    /// beforehand), then scenario 1's load, the same wrk run and bodies, on a Herald instance configured for Web Push
    /// only on a fresh store, with `plan.devices` Web Push devices registered over HTTP (one subscription each); beside
    /// scenario 1's APNs figures when they were measured in the same run. Herald's CPU per notification includes the
    /// encryption (an ECDH agreement, HKDF and AES-GCM per message).
    func acceptAndDeliverWebPush(context: ScenarioContext) async throws {
        guard let webPush else { return }
        let scenario = "1 webpush"
        Progress.shared.phase("Scenario 1 (Web Push): the push-service double's own limit, bare client (256 requests in flight)")
        let doubleRate = try await doubleLimit(webPush, scenario: scenario) { cpu in
            try await WebPushBaseline.measure(webPush, inFlight: 256, warmup: plan.warmup, duration: plan.measure, cpu: cpu)
        }

        Progress.shared.phase(
            "Scenario 1 (Web Push): Herald configured for Web Push only, fresh store, register \(plan.devices) Web Push devices over HTTP")
        let store = databasePath("webpush.sqlite")
        let herald = try startHerald("herald (Web Push)", database: store, provider: webPush)
        let figures: AcceptAndDeliverFigures
        do {
            let (port, _) = try await herald.waitUntilListening()
            let client = LoadClient(port: port, connections: plan.clients)
            let (devices, registration) = await Registration.register(
                count: plan.devices, concurrency: plan.clients, platform: .webpush, client: client, salt: "webpush",
                label: "register webpush devices", webPushSubscription: { webPush.subscriptionJSON($0) })
            await client.shutdown()
            if let note = registration.failureNote("webpush registration") { report.note(note) }
            guard !devices.isEmpty else {
                report.note("scenario 1 (Web Push): no Web Push device could be registered; not measured. Herald's output:\n\(herald.log)")
                await herald.stop()
                return
            }
            figures = try await acceptAndDeliver(
                herald: herald, port: port, bodies: devices.map { $0.notifyBody() }, provider: webPush, doubleLimit: doubleRate,
                store: store, scenario: scenario, baselines: context.baselines)
        } catch {
            await herald.stop()
            throw error
        }
        let status = await herald.stop()
        if status != 0 {
            report.note("herald (Web Push) did not exit cleanly on SIGTERM (status \(status.map(String.init) ?? "none"))")
        }
        if let apns = context.sqlite {
            reportAgainstScenario1(
                apns, delivered: figures.delivered, cpuPerNotification: figures.heraldCPUPerNotification, scenario: scenario,
                what: "Web Push devices", reference: "APNs devices")
        }
    }
}
