import Foundation
import HeraldCore
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization

extension Bench {
    /// Scenario 8: another user's notifications while one device attacks the delivery engine, the attack of the
    /// fairness issue's first measurement. A WebSocket-only device sends itself `attackSize` critical alerts through
    /// Home Assistant's endpoint; its client subscribes with `support_confirm`, reads every event, never confirms and
    /// subscribes again every 1.5 s. Meanwhile a second user sends one notification to its APNs device every 200 ms,
    /// one after another; its request latency and how many answered `delivered` are measured, first without the
    /// attack (the baseline, same process and run) and then under it. The caps that now stop such a device much
    /// earlier (`HERALD_EXEMPT_DAILY`, `HERALD_MAX_PENDING_PER_DEVICE`) are lifted, so that the engine itself is
    /// measured.
    func fairness(attackSize: Int, victimSends: Int) async throws {
        let scenario = "8 fairness"
        Progress.shared.phase(
            "Scenario 8: one device's \(Format.grouped(Double(attackSize))) unconfirmed critical alerts against another"
                + " user's \(victimSends) notifications")
        let herald = try startHerald(
            "herald (fairness)", database: databasePath("fairness.sqlite"),
            environment: ["HERALD_EXEMPT_DAILY": "10000000", "HERALD_MAX_PENDING_PER_DEVICE": "10000000"])
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 16)
        let (victims, _) = await Registration.register(
            count: 1, concurrency: 1, platform: .apns, client: client, salt: "fairness-victim", label: "register the victim")
        let (attackers, _) = await Registration.register(
            count: 1, concurrency: 1, platform: .websocket, client: client, salt: "fairness-attacker", label: "register the attacker")
        guard let victim = victims.first, let attacker = attackers.first else {
            report.note("scenario 8: registering the two devices failed")
            return
        }
        let quiet = await victimRun(client: client, victim: victim, sends: victimSends, label: "victim, no attack")

        let alert = ByteBuffer(
            string: #"{"message":"Smoke","push_token":"\#(attacker.userID)","#
                + #""registration_info":{"app_id":"io.robbie.HomeAssistant","app_version":"2025.11","os_version":"18.1"},"#
                + #""data":{"push":{"sound":{"name":"default","critical":1,"volume":1.0}}}}"#)
        let flood = await ClosedLoop.run(concurrency: 16, totalRequests: attackSize, label: "the attacker's critical alerts") { _ in
            do {
                let (status, answer) = try await client.post("/api/push/homeassistant", body: alert)
                return status == 201 ? .success(()) : .failure(BenchFailure(description: "answered \(status): \(String(buffer: answer).prefix(120))"))
            } catch {
                return .failure(BenchFailure(description: "\(error)"))
            }
        }
        if let note = flood.failureNote("scenario 8 flood") { report.note(note) }
        let attackerEvents = EventCounter()
        let attack = Task { await Self.subscribeWithoutConfirming(port: port, device: attacker, events: attackerEvents) }
        try await Task.sleep(for: .seconds(3))
        let attacked = await victimRun(client: client, victim: victim, sends: victimSends, label: "victim, under attack")
        attack.cancel()
        await client.shutdown()
        _ = await herald.stop()

        for (name, run) in [("no attack", quiet), ("under attack", attacked)] {
            for percentile in [50.0, 95.0, 99.0, 100.0] {
                report.add(
                    Figure(
                        scenario: scenario,
                        name: "another user's send latency \(percentile == 100 ? "max" : "p\(Self.percentileName(percentile))"), \(name)",
                        value: run.latency.milliseconds(atPercentile: percentile), unit: "ms",
                        ratio: name == "no attack" ? nil : run.latency.milliseconds(atPercentile: percentile)
                            / max(0.001, quiet.latency.milliseconds(atPercentile: percentile)),
                        ratioTo: name == "no attack" ? nil : "no attack"))
            }
            report.add(
                Figure(
                    scenario: scenario, name: "another user's sends answered delivered, \(name)", value: Double(run.delivered),
                    unit: "count", ratio: Double(run.delivered) / Double(max(1, run.sent)), ratioTo: "of \(run.sent) sent"))
        }
        report.add(
            Figure(
                scenario: scenario, name: "the attacker's critical alerts accepted", value: Double(flood.totalSucceeded),
                unit: "count"))
        report.add(
            Figure(
                scenario: scenario, name: "events the attacker's client received (and never confirmed)",
                value: Double(attackerEvents.value.load(ordering: .relaxed)), unit: "count"))
    }

    /// One notification to the victim's device every 200 ms, one after another.
    func victimRun(
        client: LoadClient, victim: DeviceIdentity, sends: Int, label: String
    ) async -> (latency: LatencyHistogram, delivered: Int, sent: Int) {
        var latency = LatencyHistogram.latency()
        var delivered = 0
        let clock = ContinuousClock()
        for index in 0..<sends {
            Progress.shared.status("\(label): \(index) of \(sends)")
            let started = clock.now
            if let (status, answer) = try? await client.post("/api/push/notify", body: victim.notifyBody()), status == 201 {
                latency.record(clock.now - started)
                if String(buffer: answer).contains(#""status":"delivered""#) { delivered += 1 }
            }
            try? await Task.sleep(until: started.advanced(by: .milliseconds(200)))
        }
        Progress.shared.endStatus()
        return (latency, delivered, sends)
    }

    /// The attacker's client: subscribes with `support_confirm`, reads every event, confirms none, and subscribes
    /// again every 1.5 s, until cancelled.
    private static func subscribeWithoutConfirming(port: Int, device: DeviceIdentity, events: EventCounter) async {
        var logger = Logger(label: "bench-attacker")
        logger.logLevel = .critical
        let subscribe =
            #"{"id":1,"type":"push_notification_channel","user_id":"\#(device.userID)","#
            + #""device_secret":"\#(device.secret)","support_confirm":true}"#
        _ = try? await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/api/push/websocket", logger: logger) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 16) {
                        if case .text(let text) = message, text.contains(#""type":"event""#) { events.value.add(1, ordering: .relaxed) }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await outbound.write(.text(subscribe))
                        try await Task.sleep(for: .milliseconds(1_500))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}

/// A count that escaping closures can share.
final class EventCounter: Sendable {
    let value = Atomic(0)
}
