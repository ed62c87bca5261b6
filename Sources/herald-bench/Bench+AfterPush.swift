import Foundation
import GRDB
import HeraldCore
import NIOCore

extension Bench {
    /// Scenario 13 (issue 39): `count` scheduled sends due in the same second. `count / 25` APNs devices each get an API
    /// token that schedules 25 sends (the most one device may have) for one `send_at` 20 s ahead; the lateness of each
    /// push is the time from `send_at` to the APNs double's 200. The dispatcher looks for due sends every second.
    func scheduledSendsDueAtOnce(count: Int) async throws {
        let scenario = "13 scheduled sends"
        let devices = max(1, count / 25)
        Progress.shared.phase("Scenario 13: \(count) scheduled sends due in the same second, \(devices) devices")
        let herald = try startHerald("herald (scheduled)", database: databasePath("scheduled.sqlite"))
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 16)
        defer { Task { await client.shutdown() } }
        let (registered, _) = await Registration.register(
            count: devices, concurrency: 16, platform: .apns, client: client, salt: "scheduled", label: "register devices")
        var tokens: [String] = []
        for device in registered {
            if let token = try await Self.createToken(client, device) { tokens.append(token) }
        }
        guard tokens.count == devices else {
            report.note("scenario 13: \(tokens.count) of \(devices) API tokens could be made; skipped")
            _ = await herald.stop()
            return
        }
        let sendAt = Date().addingTimeInterval(20)
        let due = ContinuousClock.now.advanced(by: .milliseconds(Int64(sendAt.timeIntervalSinceNow * 1_000)))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let schedule = #"{"notification":{"title":"Due","body":"At once"},"send_at":"\#(formatter.string(from: sendAt))"}"#
        apns.recorder.start()
        let bearers = tokens.map { "Bearer \($0)" }
        let created = await ClosedLoop.run(concurrency: 16, totalRequests: devices * 25, label: "schedule") { index in
            do {
                let (status, answer) = try await client.post(
                    "/notifications/scheduled", body: ByteBuffer(string: schedule), headers: [("Authorization", bearers[index % devices])])
                return status == 201 ? .success(()) : .failure(BenchFailure(description: "\(status): \(String(buffer: answer).prefix(160))"))
            } catch {
                return .failure(BenchFailure(description: "\(error)"))
            }
        }
        if let note = created.failureNote("scenario 13 scheduling") { report.note(note) }
        let heraldCPU = CPUWindow(pid: herald.pid)
        try await Task.sleep(until: due.advanced(by: .milliseconds(-500)))
        heraldCPU.windowStarted()
        let deadline = ContinuousClock.now.advanced(by: .seconds(120))
        while apns.recorder.count < created.totalSucceeded, ContinuousClock.now < deadline {
            Progress.shared.status("scenario 13: \(apns.recorder.count) of \(created.totalSucceeded) delivered")
            try await Task.sleep(for: .milliseconds(20))
        }
        heraldCPU.windowEnded()
        Progress.shared.endStatus()
        let answered = apns.recorder.stop()
        _ = await herald.stop()
        var lateness = LatencyHistogram.latency()
        for instant in answered.values { lateness.record(max(.microseconds(1), instant - due)) }
        report.add(
            Figure(
                scenario: scenario, name: "scheduled sends delivered", value: Double(answered.count), unit: "count",
                ratio: Double(answered.count) / Double(max(1, created.totalSucceeded)), ratioTo: "of \(created.totalSucceeded) scheduled"))
        for percentile in [50.0, 99.0, 100.0] {
            report.add(
                Figure(
                    scenario: scenario, name: "lateness \(percentile == 100 ? "max" : "p\(Self.percentileName(percentile))") (send_at to APNs 200)",
                    value: lateness.milliseconds(atPercentile: percentile), unit: "ms"))
        }
        if let perSend = heraldCPU.milliseconds(per: answered.count) {
            report.add(Figure(scenario: scenario, name: "Herald CPU per scheduled send delivered", value: perSend, unit: "ms CPU"))
        }
    }

    /// Scenario 14 (issue 42): a topic of `members` APNs devices, sent to by wrk at full speed (`/api/push/notify` with the
    /// topic id). Herald's CPU per topic send against `members` × scenario 1's CPU per notification (the issue's bound),
    /// and per delivered push against scenario 1's.
    func topicFanOut(members: Int, context: ScenarioContext) async throws {
        let scenario = "14 topic fan-out"
        Progress.shared.phase("Scenario 14: a topic of \(members) devices, wrk, \(plan.clients) connections")
        let herald = try startHerald("herald (topics)", database: databasePath("topics.sqlite"))
        let (port, _) = try await herald.waitUntilListening()
        let client = LoadClient(port: port, connections: 16)
        let (devices, _) = await Registration.register(
            count: members, concurrency: 16, platform: .apns, client: client, salt: "topic", label: "register members")
        guard let topic = try await Self.makeTopic(client, devices), devices.count == members else {
            report.note("scenario 14: the topic could not be made; skipped")
            await client.shutdown()
            _ = await herald.stop()
            return
        }
        await client.shutdown()
        let body = ByteBuffer(string: #"{"user_id":"\#(topic)","title":"Fan-out","body":"To every member"}"#)
        let load = try wrk.load("scenario-14", path: "/api/push/notify", bodies: [body], connections: plan.clients)
        let deliveries = DeliveryWindow(apns)
        let heraldCPU = CPUWindow(pid: herald.pid)
        let (_, result) = try await wrk.run(
            load, port: port, warmup: plan.warmup, duration: plan.measure, label: "topic sends", observers: [heraldCPU, deliveries])
        _ = await herald.stop()
        if let note = result.failureNote("scenario 14") { report.note(note) }
        report.add(Figure(scenario: scenario, name: "topic sends accepted per second", value: result.perSecond, unit: "req/s"))
        let delivered = Double(deliveries.delivered) / result.window.seconds
        report.add(
            Figure(
                scenario: scenario, name: "pushes delivered per second, same window", value: delivered, unit: "push/s",
                ratio: context.sqlite.map { delivered / $0.delivered }, ratioTo: context.sqlite == nil ? nil : "scenario 1 delivered/s"))
        heraldCPU.report(into: report, scenario: scenario, what: "Herald")
        let single = context.sqlite?.heraldCPUPerNotification
        if let perSend = heraldCPU.milliseconds(per: result.succeeded) {
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per topic send (\(members) members)", value: perSend, unit: "ms CPU",
                    ratio: single.map { perSend / (Double(members) * $0) }, ratioTo: single == nil ? nil : "\(members) × scenario 1's per notification",
                    target: "≤ 1 × (\(members) single sends)", met: single.map { perSend <= Double(members) * $0 }))
        }
        if let perPush = heraldCPU.milliseconds(per: deliveries.delivered) {
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per delivered push", value: perPush, unit: "ms CPU",
                    ratio: single.map { perPush / $0 }, ratioTo: single == nil ? nil : "scenario 1's per notification"))
        }
    }

    /// Scenario 15 (issue 39): scenario 1 on an instance whose retention (`HERALD_RETENTION=60`) deletes while it runs:
    /// the load runs `prefill` first, so that the measured window deletes what the prefill delivered more than 60 s
    /// before. Delivered/s and CPU per notification against scenario 1's (same run), and the database's size.
    func acceptAndDeliverWithRetention(prefill: Duration, context: ScenarioContext) async throws {
        let scenario = "15 retention"
        let database = databasePath("retention.sqlite")
        Progress.shared.phase("Scenario 15: scenario 1 with HERALD_RETENTION=60, after \(Int(prefill.seconds)) s of load")
        let herald = try startHerald("herald (retention)", database: database, environment: ["HERALD_RETENTION": "60"])
        let (port, _) = try await herald.waitUntilListening()
        let (devices, _) = await registerDevices(port: port, platform: .apns, salt: "retention")
        let bodies = devices.map { $0.notifyBody() }
        let load = try wrk.load("scenario-15-prefill", path: "/api/push/notify", bodies: bodies, connections: plan.clients)
        _ = try await wrk.run(load, port: port, duration: prefill, label: "prefill (deleted during the measurement)")
        let sizeBefore = Self.databaseBytes(database)
        let prefilled = try Self.notificationCount(database)
        let figures = try await acceptAndDeliver(
            herald: herald, port: port, bodies: bodies, provider: apns, doubleLimit: context.baselines.double, store: database,
            scenario: scenario, baselines: context.baselines)
        let sizeAfter = Self.databaseBytes(database)
        _ = await herald.stop()
        // What the retention deleted: the rows left against those the prefill left and the run accepted since.
        let left = try Self.notificationCount(database)
        let acceptedSince = Int(figures.accepted * plan.measure.seconds)
        report.add(
            Figure(
                scenario: scenario, name: "notifications in the store after the run (the prefill left \(Format.grouped(Double(prefilled))))",
                value: Double(left), unit: "count", ratio: Double(left) / Double(max(1, prefilled + acceptedSince)),
                ratioTo: "of the prefill's and the measured window's (about \(Format.grouped(Double(prefilled + acceptedSince))))"))
        report.add(
            Figure(
                scenario: scenario, name: "database file and WAL after the prefill / after the measurement", value: Double(sizeAfter) / 1_048_576,
                unit: "MB", ratio: Double(sizeAfter) / Double(max(1, sizeBefore)), ratioTo: "\(Format.grouped(Double(sizeBefore) / 1_048_576)) MB before"))
        if let scenario1 = context.sqlite {
            reportAgainstScenario1(
                scenario1, delivered: figures.delivered, cpuPerNotification: figures.heraldCPUPerNotification, scenario: scenario,
                what: "retention deleting", reference: "no retention pass due")
        }
    }

    private static func notificationCount(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM notification") ?? 0 }
    }

    private static func databaseBytes(_ path: String) -> Int {
        [path, path + "-wal"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
        }
    }

    /// An API token of `device` (`POST /api/push/tokens` with its owner credentials).
    static func createToken(_ client: LoadClient, _ device: DeviceIdentity) async throws -> String? {
        let basic = "Basic " + Data("\(device.userID):\(device.secret)".utf8).base64EncodedString()
        let (status, answer) = try await client.post(
            "/api/push/tokens", body: ByteBuffer(string: #"{"name":"bench"}"#), headers: [("Authorization", basic)])
        guard status == 201 else { return nil }
        return try JSONValue.decode(Data(answer.readableBytesView)).objectValue?["token"]?.stringValue
    }

    /// A topic made by the first device and joined by the others; its id.
    static func makeTopic(_ client: LoadClient, _ devices: [DeviceIdentity]) async throws -> String? {
        func basic(_ device: DeviceIdentity) -> [(String, String)] {
            [("Authorization", "Basic " + Data("\(device.userID):\(device.secret)".utf8).base64EncodedString())]
        }
        guard let creator = devices.first else { return nil }
        let (status, answer) = try await client.post("/api/push/topics", body: ByteBuffer(string: "{}"), headers: basic(creator))
        let created = try JSONValue.decode(Data(answer.readableBytesView)).objectValue
        guard status == 201, let topic = created?["topic_id"]?.stringValue, let code = created?["join_code"]?.stringValue else { return nil }
        for member in devices.dropFirst() {
            let (joined, _) = try await client.post(
                "/api/push/topics/\(topic)/members", body: ByteBuffer(string: #"{"join_code":"\#(code)"}"#), headers: basic(member))
            guard joined == 201 else { return nil }
        }
        return topic
    }
}
