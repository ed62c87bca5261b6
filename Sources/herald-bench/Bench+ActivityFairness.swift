import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import Synchronization

extension Bench {
    /// Activities of scenario 10's heavy device: PushWard's 50 per device, five of them ongoing.
    static let heavyActivities = 50
    /// Log lines per PATCH of scenario 10 (PushWard's maximum, 20), each 512 four-byte characters (2,048 bytes).
    static let heavyLinesPerPatch = 20

    /// Scenario 10 (issue 37): another user's sends while one device at its activity maxima PATCHes continuously.
    /// A device gets 50 `log` activities (five ongoing), each filled by `rounds` PATCHes of 20 lines of 2,048 bytes
    /// (the largest line both the old character limit and the new byte limit accept), so that every backlog is at
    /// the size Herald keeps; then 4 connections PATCH those activities round-robin, flat out (the per-token write
    /// limit is lifted, so that the store itself is measured). Meanwhile a second user sends one notification to its
    /// APNs device every 200 ms; its latency is measured without and under the PATCHes, as in scenario 8.
    func activityFairness(victimSends: Int, rounds: Int) async throws {
        let scenario = "10 activity fairness"
        Progress.shared.phase("Scenario 10: one device's 50 full log activities PATCHed flat out against another user's \(victimSends) sends")
        // A herald from before issue 37 has no write limit and refuses these options: the bench's own
        // HERALD_BENCH_HERALD_BEFORE_37=1 leaves them out (performance.md, scenario 10's "before" run).
        let before37 = ProcessInfo.processInfo.environment["HERALD_BENCH_HERALD_BEFORE_37"] == "1"
        let herald = try startHerald(
            "herald (activity fairness)", database: databasePath("activity-fairness.sqlite"),
            environment: before37 ? [:] : ["HERALD_ACTIVITY_WRITE_BURST": "10000000", "HERALD_ACTIVITY_WRITES_PER_SECOND": "10000000"])
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 16)
        let (victims, _) = await Registration.register(
            count: 1, concurrency: 1, platform: .apns, client: client, salt: "activity-victim", label: "register the victim")
        guard let victim = victims.first else {
            report.note("scenario 10: registering the victim failed")
            _ = await herald.stop()
            return
        }
        let quiet = await victimRun(client: client, victim: victim, sends: victimSends, label: "victim, no PATCHes")
        let bearer: String
        do {
            bearer = try await Self.fillHeavyDevice(client: client, rounds: rounds)
        } catch {
            report.note("scenario 10: setting up the heavy device failed: \(error)")
            await client.shutdown()
            _ = await herald.stop()
            return
        }
        let patches = PatchCounter()
        let heavyCPU = CPUWindow(pid: herald.pid)
        let attack = Task {
            await withTaskGroup(of: Void.self) { group in
                for connection in 0..<4 {
                    group.addTask { await Self.patchFlatOut(client: client, bearer: bearer, connection: connection, counter: patches) }
                }
            }
        }
        try await Task.sleep(for: .seconds(3))
        let clock = ContinuousClock()
        let windowStart = clock.now
        let (patchesBefore, _) = patches.snapshot()
        heavyCPU.windowStarted()
        let attacked = await victimRun(client: client, victim: victim, sends: victimSends, label: "victim, under PATCHes")
        heavyCPU.windowEnded()
        let seconds = (clock.now - windowStart).seconds
        let (patchesAfter, patchLatency) = patches.snapshot()
        attack.cancel()
        await client.shutdown()
        _ = await herald.stop()

        for (name, run) in [("no PATCHes", quiet), ("under PATCHes", attacked)] {
            for percentile in [50.0, 95.0, 99.0, 100.0] {
                let value = run.latency.milliseconds(atPercentile: percentile)
                let quietValue = quiet.latency.milliseconds(atPercentile: percentile)
                report.add(
                    Figure(
                        scenario: scenario,
                        name: "another user's send latency \(percentile == 100 ? "max" : "p\(Self.percentileName(percentile))"), \(name)",
                        value: value, unit: "ms", ratio: name == "no PATCHes" ? nil : value / max(0.001, quietValue),
                        ratioTo: name == "no PATCHes" ? nil : "no PATCHes"))
            }
            report.add(
                Figure(
                    scenario: scenario, name: "another user's sends answered delivered, \(name)", value: Double(run.delivered), unit: "count",
                    ratio: Double(run.delivered) / Double(max(1, run.sent)), ratioTo: "of \(run.sent) sent"))
        }
        report.add(
            Figure(
                scenario: scenario, name: "the heavy device's PATCHes answered 200 per second, same window",
                value: Double(patchesAfter - patchesBefore) / max(0.001, seconds), unit: "req/s"))
        for percentile in [50.0, 99.0] {
            report.add(
                Figure(
                    scenario: scenario, name: "the heavy device's PATCH latency p\(Self.percentileName(percentile))",
                    value: patchLatency.milliseconds(atPercentile: percentile), unit: "ms"))
        }
        if let perPatch = heavyCPU.milliseconds(per: patchesAfter - patchesBefore) {
            report.add(Figure(scenario: scenario, name: "Herald CPU per heavy PATCH (user+system)", value: perPatch, unit: "ms CPU"))
        }
    }

    /// The body of one heavy PATCH: 20 distinct lines of 512 four-byte characters.
    static func heavyLines(_ tag: String) -> String {
        let text = String(repeating: "\u{1F600}", count: 500)
        return (0..<heavyLinesPerPatch).map { #"{"text":"\#(tag)-\#($0) \#(text)","level":"info"}"# }.joined(separator: ",")
    }

    /// Registers the heavy device, its API token and its 50 log activities (five ongoing), each PATCHed `rounds`
    /// times; returns the token's `Authorization` value.
    static func fillHeavyDevice(client: LoadClient, rounds: Int) async throws -> String {
        let token = DeviceIdentity.seeded(0, salt: "heavy").token
        let startToken = DeviceIdentity.seeded(0, salt: "heavy-start").token
        let device = try await client.send(
            .POST, "/api/push/register",
            body: #"{"token":"\#(token)","environment":"production","live_activity_push_to_start_token":"\#(startToken)"}"#
        ).object(expecting: 201, "register the heavy device")
        guard let userID = device["user_id"]?.stringValue, let secret = device["device_secret"]?.stringValue else {
            throw BenchFailure(description: "register answered without credentials")
        }
        let basic = "Basic " + Data("\(userID):\(secret)".utf8).base64EncodedString()
        let created = try await client.send(.POST, "/api/push/tokens", body: #"{"name":"heavy"}"#, authorization: basic)
        guard let apiToken = try created.object(expecting: 201, "create the heavy API token")["token"]?.stringValue else {
            throw BenchFailure(description: "POST /api/push/tokens answered without a token")
        }
        let bearer = "Bearer \(apiToken)"
        for round in 0..<max(1, rounds) {
            Progress.shared.status("heavy device: round \(round + 1) of \(rounds)")
            for index in 0..<heavyActivities {
                let state = round == 0 && index < 5 ? #""state":"ongoing","# : ""
                let lines = heavyLines("r\(round)")
                let body = #"{\#(state)"content":{"template":"log","lines":[\#(lines)]}}"#
                let answer = try await client.send(.PATCH, "/activities/heavy-\(index)?upsert=true", body: body, authorization: bearer)
                guard answer.status == 200 || answer.status == 201 else {
                    throw BenchFailure(description: "PATCH heavy-\(index) answered \(answer.status): \(String(buffer: answer.body).prefix(200))")
                }
            }
        }
        Progress.shared.endStatus()
        return bearer
    }

    /// PATCHes the heavy device's activities round-robin, one after another, until cancelled.
    static func patchFlatOut(client: LoadClient, bearer: String, connection: Int, counter: PatchCounter) async {
        let clock = ContinuousClock()
        var number = connection
        while !Task.isCancelled {
            let lines = heavyLines("c\(connection)-\(number)")
            let body = #"{"content":{"lines":[\#(lines)]}}"#
            let started = clock.now
            if let answer = try? await client.send(.PATCH, "/activities/heavy-\(number % heavyActivities)", body: body, authorization: bearer),
                answer.status == 200
            {
                counter.record(clock.now - started)
            }
            number += 4
        }
    }
}

/// The heavy device's PATCHes: how many answered 200 and their latencies.
final class PatchCounter: Sendable {
    private let state = Mutex<(count: Int, latency: LatencyHistogram)>((0, LatencyHistogram.latency()))

    func record(_ duration: Duration) {
        state.withLock { state in
            state.count += 1
            state.latency.record(duration)
        }
    }

    func snapshot() -> (count: Int, latency: LatencyHistogram) {
        state.withLock { ($0.count, $0.latency) }
    }
}
