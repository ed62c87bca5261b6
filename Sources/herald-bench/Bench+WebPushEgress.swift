import Foundation
import HeraldCore
import HeraldTesting
import HeraldWebPush
import NIOCore
import NIOPosix
import Synchronization

extension Bench {
    /// The Web Push options of scenarios 10 and 11: a VAPID key and the loopback network allowed (any port there).
    private static func webPushEnvironment() -> [String: String] {
        [
            "HERALD_VAPID_SUBJECT": BenchWebPush.subject, "HERALD_VAPID_PRIVATE_KEY": VAPIDKey.generate(),
            "HERALD_WEBPUSH_ALLOWED_HOSTS": "127.0.0.0/8",
        ]
    }

    /// Scenario 11: Herald's memory (RSS) as Web Push devices on `endpoints` distinct push-service endpoints (each its
    /// own port on 127.0.0.1, where nothing listens: every attempt is refused at once and retried later) are each sent
    /// one notification, 250 endpoints at a time, then once more all of them: the figure after each step, and whether
    /// it stops growing. Before issue 37 each distinct host and port got an HTTP client and a gate of its own, never
    /// freed; now at most 32 clients are kept.
    func webPushMemory(endpoints: Int) async throws {
        let scenario = "11 webpush memory"
        Progress.shared.phase("Scenario 11: Herald's RSS across \(endpoints) distinct Web Push endpoints")
        let herald = try startHerald(
            "herald (Web Push memory)", database: databasePath("webpush-memory.sqlite"), environment: Self.webPushEnvironment())
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 16)
        let subscriber = WebPushDecryption.Subscriber()
        let (devices, registration) = await Registration.register(
            count: endpoints, concurrency: 16, platform: .webpush, client: client, salt: "webpush-memory",
            label: "register \(endpoints) Web Push devices", webPushSubscription: { index in
                #"{"endpoint":"https://127.0.0.1:\#(40_000 + index)/push/\#(index)","#
                    + #""keys":{"p256dh":"\#(subscriber.p256dh)","auth":"\#(subscriber.authText)"}}"#
            })
        if let note = registration.failureNote("scenario 11 registration") { report.note(note) }
        try await Task.sleep(for: .seconds(2))
        let registered = Double(ProcessStats.residentBytes(of: herald.pid) ?? 0) / 1_048_576
        report.add(Figure(scenario: scenario, name: "RSS after registering \(devices.count) devices", value: registered, unit: "MB"))
        var steps: [(String, ArraySlice<DeviceIdentity>)] = stride(from: 0, to: devices.count, by: 250).map { start in
            let end = min(devices.count, start + 250)
            return ("RSS after sending to endpoints 1-\(end)", devices[start..<end])
        }
        steps.append(("RSS after sending to all \(devices.count) endpoints again", devices[...]))
        for (name, slice) in steps {
            let sent = await ClosedLoop.run(concurrency: 16, totalRequests: slice.count, label: name) { index in
                let device = slice[slice.startIndex + index]
                do {
                    let (status, _) = try await client.post("/api/push/notify", body: device.notifyBody())
                    return status == 201 ? .success(()) : .failure(BenchFailure(description: "answered \(status)"))
                } catch {
                    return .failure(BenchFailure(description: "\(error)"))
                }
            }
            if let note = sent.failureNote("scenario 11 sends") { report.note(note) }
            try await Task.sleep(for: .seconds(5))  // the attempts (refused at once) and their first retries
            let rss = Double(ProcessStats.residentBytes(of: herald.pid) ?? 0) / 1_048_576
            report.add(
                Figure(
                    scenario: scenario, name: name, value: rss, unit: "MB", ratio: rss / max(1, registered),
                    ratioTo: "after registering"))
        }
        await client.shutdown()
        _ = await herald.stop()
    }

    /// Scenario 12: another user's APNs sends (one every 200 ms, one after another) while `attackers` Web Push devices
    /// whose push service accepts TCP connections and never answers (not even TLS) each send their whole daily quota
    /// (`HERALD_RATE_LIMIT_DAILY=150`, the default): first without them (the baseline, same process), then under them.
    /// Before issue 37 every one of those sends waited at the silent host's gate holding its delivery slot: seven
    /// devices held all 1,024 for minutes.
    func silentPushHost(attackers: Int, victimSends: Int) async throws {
        let scenario = "12 silent push host"
        Progress.shared.phase(
            "Scenario 12: another user's APNs sends while \(attackers) Web Push devices send their daily quota to a silent host")
        let silent = try await SilentListener.start()
        var environment = Self.webPushEnvironment()
        environment["HERALD_RATE_LIMIT_DAILY"] = "150"
        let herald = try startHerald("herald (silent push host)", database: databasePath("silent.sqlite"), environment: environment)
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 32)
        let subscriber = WebPushDecryption.Subscriber()
        // Two victims, one a run: each run's sends fit its own daily quota (150), as the attackers' fill theirs.
        let (victims, _) = await Registration.register(
            count: 2, concurrency: 1, platform: .apns, client: client, salt: "silent-victim", label: "register the victims")
        let (senders, _) = await Registration.register(
            count: attackers, concurrency: 1, platform: .webpush, client: client, salt: "silent-attacker",
            label: "register the Web Push devices", webPushSubscription: { index in
                #"{"endpoint":"https://127.0.0.1:\#(silent.port)/push/\#(index)","#
                    + #""keys":{"p256dh":"\#(subscriber.p256dh)","auth":"\#(subscriber.authText)"}}"#
            })
        guard victims.count == 2, senders.count == attackers else {
            report.note("scenario 12: registering the devices failed")
            _ = await herald.stop()
            try? await silent.close()
            return
        }
        let quiet = await victimRun(client: client, victim: victims[0], sends: victimSends, label: "victim, no silent host")
        let quota = 150
        let flood = await ClosedLoop.run(concurrency: 32, totalRequests: attackers * quota, label: "the Web Push devices' quota") { index in
            do {
                let (status, _) = try await client.post("/api/push/notify", body: senders[index % attackers].notifyBody())
                return status == 201 ? .success(()) : .failure(BenchFailure(description: "answered \(status)"))
            } catch {
                return .failure(BenchFailure(description: "\(error)"))
            }
        }
        if let note = flood.failureNote("scenario 12 flood") { report.note(note) }
        let attacked = await victimRun(client: client, victim: victims[1], sends: victimSends, label: "victim, silent host")
        await client.shutdown()
        _ = await herald.stop()
        try? await silent.close()

        for (name, run) in [("no silent host", quiet), ("silent host", attacked)] {
            for percentile in [50.0, 95.0, 99.0] {
                let value = run.latency.milliseconds(atPercentile: percentile)
                let base = quiet.latency.milliseconds(atPercentile: percentile)
                report.add(
                    Figure(
                        scenario: scenario, name: "another user's APNs send p\(Self.percentileName(percentile)), \(name)",
                        value: value, unit: "ms", ratio: name == "no silent host" ? nil : value / max(0.001, base),
                        ratioTo: name == "no silent host" ? nil : "no silent host", target: percentile == 95 ? "< 100 ms" : nil,
                        met: percentile == 95 ? value < 100 && run.delivered == run.sent : nil))
            }
            report.add(
                Figure(
                    scenario: scenario, name: "another user's sends answered delivered, \(name)", value: Double(run.delivered),
                    unit: "count", ratio: Double(run.delivered) / Double(max(1, run.sent)), ratioTo: "of \(run.sent) sent"))
        }
        report.add(
            Figure(
                scenario: scenario, name: "Web Push sends accepted (to the silent host)", value: Double(flood.totalSucceeded),
                unit: "count"))
        report.add(
            Figure(
                scenario: scenario, name: "connections the silent host accepted", value: Double(silent.accepted), unit: "count"))
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never writes a byte (a push service that never answers).
final class SilentListener: Sendable {
    let port: Int
    private let channel: any Channel
    private let counter: EventCounter

    var accepted: Int { counter.value.load(ordering: .relaxed) }

    private init(port: Int, channel: any Channel, counter: EventCounter) {
        self.port = port
        self.channel = channel
        self.counter = counter
    }

    static func start() async throws -> SilentListener {
        let counter = EventCounter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1_024)
            .childChannelInitializer { channel in
                counter.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentListener(port: channel.localAddress?.port ?? 0, channel: channel, counter: counter)
    }

    func close() async throws {
        try await channel.close()
    }
}
