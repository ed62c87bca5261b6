import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import Synchronization

/// One ongoing activity of scenario 9: its path and the API token of its device's owner.
struct BenchActivity: Sendable {
    var slug: String
    var authorization: String
}

extension Bench {
    /// Ongoing activities per device: PushWard's limit is 5 (a sixth preempts the lowest priority).
    static let activitiesPerDevice = 5

    /// Scenario 9 (issue 31): activity updates. `count` ongoing activities (PushWard's API: created with an API token,
    /// PATCHed to `ongoing` so that the start reaches the APNs double, the update token reported by the device), then
    /// wrk's closed loop of `PATCH /activities/{slug}` (silent content changes) spread over them. Accepted updates per
    /// second, pushes delivered per second (the dispatcher coalesces: delivered ≤ accepted), and Herald's CPU per
    /// accepted update beside scenario 1's CPU per notification when scenario 1 ran in the same run.
    func activityUpdates(count: Int, context: ScenarioContext) async throws {
        let scenario = "9 activities"
        let devices = (count + Self.activitiesPerDevice - 1) / Self.activitiesPerDevice
        Progress.shared.phase(
            "Scenario 9: fresh store, \(devices) devices with push-to-start tokens, \(count) ongoing activities over HTTP")
        // The per-token write limit (10 a second, issue 37) lifted, as in scenario 10: wrk's closed loop sends each of
        // the 200 tokens more than that, and the 429s it would answer cost CPU that no accepted update carries (a
        // build whose PATCH got faster was answered 429 five times for every update accepted). A herald from before
        // issue 37 refuses these options: HERALD_BENCH_HERALD_BEFORE_37=1 leaves them out.
        let before37 = ProcessInfo.processInfo.environment["HERALD_BENCH_HERALD_BEFORE_37"] == "1"
        let herald = try startHerald(
            "herald (activities)", database: databasePath("activities.sqlite"),
            environment: before37 ? [:] : ["HERALD_ACTIVITY_WRITE_BURST": "10000000", "HERALD_ACTIVITY_WRITES_PER_SECOND": "10000000"])
        do {
            let (port, _) = try await herald.waitUntilListening()
            let client = LoadClient(port: port, connections: plan.clients)
            let before = apns.delivered
            let (activities, setup) = await Self.startActivities(count: count, devices: devices, concurrency: plan.clients, client: client)
            await client.shutdown()
            if let note = setup.failureNote("scenario 9 setup") { report.note(note) }
            guard !activities.isEmpty else {
                report.note("scenario 9: no activity could be started; not measured. Herald's output:\n\(herald.log)")
                await herald.stop()
                return
            }
            let (_, started) = await waitForDeliveries(reaching: before + activities.count, timeout: .seconds(60), label: "activity starts")
            if !started {
                report.note("scenario 9: not every start reached the APNs double within 60 s (\(apns.delivered - before) of \(activities.count))")
            }
            try await measureActivityUpdates(herald: herald, port: port, activities: activities, scenario: scenario, context: context)
        } catch {
            await herald.stop()
            throw error
        }
        let status = await herald.stop()
        if status != 0 {
            report.note("herald (activities) did not exit cleanly on SIGTERM (status \(status.map(String.init) ?? "none"))")
        }
    }

    private func measureActivityUpdates(
        herald: ChildProcess, port: Int, activities: [BenchActivity], scenario: String, context: ScenarioContext
    ) async throws {
        Progress.shared.phase("Scenario 9: PATCH /activities/{slug}, wrk, \(plan.clients) connections, \(activities.count) activities")
        // Eight rounds over every activity, each round a different progress: consecutive PATCHes of one slug differ.
        var lines: [ByteBuffer] = []
        for round in 0..<8 {
            for activity in activities {
                let body = #"{"content":{"template":"generic","state":"Step \#(round)","progress":\#(Double(round) / 10)}}"#
                lines.append(ByteBuffer(string: "/activities/\(activity.slug)\t\(activity.authorization)\t\(body)"))
            }
        }
        let load = try wrk.load(
            "scenario-9-activities", path: "/activities", bodies: lines, connections: plan.clients, method: "PATCH", addressedLines: true)
        let deliveries = DeliveryWindow(apns)
        let heraldCPU = CPUWindow(pid: herald.pid)
        let (_, result) = try await wrk.run(
            load, port: port, warmup: plan.warmup, duration: plan.measure, label: "activity updates", observers: [heraldCPU, deliveries])
        if let note = result.failureNote("scenario 9") { report.note(note) }
        let delivered = Double(deliveries.delivered) / result.window.seconds
        report.add(
            Figure(
                scenario: scenario, name: "activity updates accepted (2xx from wrk) per second", value: result.perSecond, unit: "req/s",
                ratio: result.perSecond / context.baselines.bareStack, ratioTo: "bare stack"))
        report.add(
            Figure(
                scenario: scenario, name: "activity pushes delivered (APNs 200) per second, same window", value: delivered,
                unit: "push/s", ratio: result.perSecond > 0 ? delivered / result.perSecond : nil, ratioTo: "accepted (coalescing)"))
        for percentile in [50.0, 99.0] {
            report.add(
                Figure(
                    scenario: scenario, name: "PATCH latency p\(Self.percentileName(percentile)) at saturation (wrk)",
                    value: result.milliseconds(atPercentile: percentile), unit: "ms"))
        }
        heraldCPU.report(into: report, scenario: scenario, what: "Herald")
        let perUpdate = heraldCPU.milliseconds(per: result.succeeded)
        if let perUpdate {
            let scenario1 = context.sqlite?.heraldCPUPerNotification
            report.add(
                Figure(
                    scenario: scenario, name: "Herald CPU per accepted update (user+system)", value: perUpdate, unit: "ms CPU",
                    ratio: scenario1.map { perUpdate / $0 }, ratioTo: scenario1.map { "scenario 1's per notification (\(Format.value($0, unit: "ms CPU")))" }))
        }
        if let perPush = heraldCPU.milliseconds(per: deliveries.delivered) {
            report.add(Figure(scenario: scenario, name: "Herald CPU per delivered activity push (user+system)", value: perPush, unit: "ms CPU"))
        }
        reportGenerator(result, into: scenario)
    }

    /// Registers `devices` APNs devices with push-to-start tokens, an API token for each owner, and up to
    /// ``activitiesPerDevice`` activities each (`count` in all): created, PATCHed to `ongoing`, update token reported.
    static func startActivities(
        count: Int, devices: Int, concurrency: Int, client: LoadClient
    ) async -> (activities: [BenchActivity], result: ClosedLoopResult) {
        let started = Mutex<[BenchActivity]>([])
        let result = await ClosedLoop.run(concurrency: concurrency, totalRequests: devices, label: "start activities") { index in
            do {
                let token = DeviceIdentity.seeded(index, salt: "activities").token
                let startToken = DeviceIdentity.seeded(index, salt: "push-to-start").token
                let registration = try await client.send(
                    .POST, "/api/push/register",
                    body: #"{"token":"\#(token)","environment":"production","live_activity_push_to_start_token":"\#(startToken)"}"#)
                let device = try registration.object(expecting: 201, "register")
                guard let userID = device["user_id"]?.stringValue, let secret = device["device_secret"]?.stringValue else {
                    return .failure(BenchFailure(description: "register answered without credentials"))
                }
                let basic = "Basic " + Data("\(userID):\(secret)".utf8).base64EncodedString()
                let created = try await client.send(.POST, "/api/push/tokens", body: #"{"name":"bench"}"#, authorization: basic)
                guard let apiToken = try created.object(expecting: 201, "create API token")["token"]?.stringValue else {
                    return .failure(BenchFailure(description: "POST /api/push/tokens answered without a token"))
                }
                let bearer = "Bearer \(apiToken)"
                let first = index * activitiesPerDevice
                for number in first..<min(first + activitiesPerDevice, count) {
                    let slug = "bench-\(number)"
                    _ = try await client.send(.POST, "/activities", body: #"{"slug":"\#(slug)","name":"Bench \#(number)"}"#, authorization: bearer)
                        .object(expecting: 201, "create \(slug)")
                    _ = try await client.send(
                        .PATCH, "/activities/\(slug)", body: #"{"state":"ongoing","content":{"template":"generic","state":"Start","progress":0}}"#,
                        authorization: bearer
                    ).object(expecting: 200, "start \(slug)")
                    let updateToken = String(format: "%064lx", number + 1)
                    let reported = try await client.send(
                        .PUT, "/api/push/activities/\(slug)/token", body: #"{"token":"\#(updateToken)"}"#, authorization: basic)
                    guard reported.status == 204 else {
                        return .failure(BenchFailure(description: "PUT token of \(slug) answered \(reported.status)"))
                    }
                    started.withLock { $0.append(BenchActivity(slug: slug, authorization: bearer)) }
                }
                return .success(())
            } catch let failure as BenchFailure {
                return .failure(failure)
            } catch {
                return .failure(BenchFailure(description: "starting activities failed: \(error)"))
            }
        }
        return (started.withLock { $0 }, result)
    }
}

/// An answer of ``LoadClient/send(_:_:body:authorization:)``.
struct LoadAnswer: Sendable {
    var status: UInt
    var body: ByteBuffer

    /// The body as a JSON object when the status is `expected`; a ``BenchFailure`` naming `what` otherwise.
    func object(expecting expected: UInt, _ what: String) throws(BenchFailure) -> [String: JSONValue] {
        guard status == expected, case .object(let object)? = try? JSONValue.decode(Data(body.readableBytesView)) else {
            throw BenchFailure(description: "\(what) answered \(status): \(String(buffer: body).prefix(200))")
        }
        return object
    }
}

extension LoadClient {
    /// `method path` with a JSON body and an `Authorization` header when given.
    func send(_ method: HTTPMethod, _ path: String, body: String, authorization: String? = nil) async throws -> LoadAnswer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "content-type", value: "application/json")
        if let authorization { request.headers.add(name: "authorization", value: authorization) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: .seconds(120))
        return LoadAnswer(status: response.status.code, body: try await response.body.collect(upTo: 1 << 20))
    }
}
