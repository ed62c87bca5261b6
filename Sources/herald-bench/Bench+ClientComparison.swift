import AsyncHTTPClient
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

extension Bench {
    /// Scenario b2 (issue 10, step 5): AsyncHTTPClient over HTTP/2 and TLS (Herald's APNs client until issue 10)
    /// against Herald's own client built directly on swift-nio-http2 (`APNsConnection`: frames on stream ids, no
    /// channel per stream), both driving the APNs double as baseline b does: same double, payload, provider token,
    /// 2 connections, 256 requests in flight, warm-up and window; AsyncHTTPClient first, then Herald's client, each on
    /// fresh connections. Both run in the bench process beside the double, so the bench process's CPU per push differs
    /// between the two by what the clients cost.
    func clientComparison() async throws {
        let scenario = "b2 APNs client"
        let connections = 2
        let inFlight = 256
        Progress.shared.phase(
            "Scenario b2: APNs double, AsyncHTTPClient against Herald's APNsConnection (swift-nio-http2)"
                + " (\(connections) connections, \(inFlight) streams in flight)")
        let push = try APNsBaseline.Push(apns)

        let ahc = try await DoubleBaseline.withClients(connections, trusting: apns.double.caPath) { clients in
            await measureAPNsClient("AsyncHTTPClient", scenario: scenario, inFlight: inFlight) { index in
                do {
                    let response = try await clients[index % clients.count].execute(
                        push.request(index), timeout: .seconds(30))
                    let body = try await response.body.collect(upTo: 65_536)
                    return .answered(status: Int(response.status.code), body: body)
                } catch {
                    return .failed("\(error)")
                }
            }
        }

        // Herald's own connection (HeraldAPNs), opened as its provider opens them, used in turn.
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(apns.double.caPath)]
        tls.applicationProtocols = ["h2"]
        let tlsContext = try NIOSSLContext(configuration: tls)
        guard let endpoint = APNsConnection.Endpoint(baseURL: apns.double.baseURL) else {
            throw BenchFailure(description: "b2: the double's URL \(apns.double.baseURL) is not an https:// URL")
        }
        var opened: [APNsConnection] = []
        for _ in 0..<connections {
            opened.append(
                try await APNsConnection.connect(
                    to: endpoint, tls: tlsContext, group: MultiThreadedEventLoopGroup.singleton, readyWithin: .seconds(10)
                ).get())
        }
        let herald = opened
        let nio = await measureAPNsClient("swift-nio-http2", scenario: scenario, inFlight: inFlight) { index in
            do {
                let answer = try await herald[index % herald.count].post(
                    path: push.path(index), headers: push.headers(index), body: APNsBaseline.payload,
                    timeout: .seconds(30))
                return .answered(status: answer.status, body: answer.body)
            } catch {
                return .failed("\(error)")
            }
        }
        for connection in herald { await connection.close() }

        report.add(
            Figure(
                scenario: scenario, name: "swift-nio-http2 / AsyncHTTPClient, pushes per second", value: nio.rate / ahc.rate,
                unit: "x"))
        if let nioCPU = nio.cpuPerPush, let ahcCPU = ahc.cpuPerPush {
            report.add(
                Figure(
                    scenario: scenario, name: "swift-nio-http2 / AsyncHTTPClient, bench-process CPU per push",
                    value: nioCPU / ahcCPU, unit: "x"))
            report.add(
                Figure(
                    scenario: scenario, name: "AsyncHTTPClient − swift-nio-http2, bench-process CPU per push",
                    value: ahcCPU - nioCPU, unit: "ms CPU"))
        }
    }

    /// What a client's request came to: the double's answer, or an error before or instead of one.
    enum ClientAnswer: Sendable {
        case answered(status: Int, body: ByteBuffer)
        case failed(String)
    }

    /// One client's figures in scenario b2.
    struct ClientFigures {
        /// Answers `200` the client read in the window, per second.
        var rate: Double
        /// The bench process's user + system CPU over the window per `200` the client read in it, milliseconds.
        var cpuPerPush: Double?
    }

    /// Drives `send` in a closed loop of `inFlight` requests (warm-up, then the window) and reports: `200`s per
    /// second, the bench process's CPU per `200`, latency, and the audit: answers other than `200` and errors over
    /// the whole run (warm-up included; both should be 0), and the double's own count of `200`s against the client's.
    private func measureAPNsClient(
        _ name: String, scenario: String, inFlight: Int, send: @escaping @Sendable (Int) async -> ClientAnswer
    ) async -> ClientFigures {
        let tally = AnswerTally()
        let cpu = CPUWindow(pid: 0)
        let machine = CPUWindow(reading: ProcessStats.machineBusySeconds)
        let deliveries = DeliveryWindow(apns)
        let before = apns.double.counters
        let result = await ClosedLoop.run(
            concurrency: inFlight, warmup: plan.warmup, duration: plan.measure, label: name,
            observers: [cpu, machine, deliveries]
        ) { index in
            switch await send(index) {
            case .answered(200, _):
                tally.ok.add(1, ordering: .relaxed)
                return .success(())
            case .answered(let status, let body):
                tally.other.add(1, ordering: .relaxed)
                return .failure(BenchFailure(description: "\(name): the double answered \(status) \(String(buffer: body))"))
            case .failed(let description):
                tally.errors.add(1, ordering: .relaxed)
                return .failure(BenchFailure(description: "\(name): \(description)"))
            }
        }
        // The double counts an answer just after writing it: let the last ones be counted.
        try? await Task.sleep(for: .milliseconds(200))
        let after = apns.double.counters
        let doubleOK = after.accepted - before.accepted
        let doubleOther = after.answers.values.reduce(0, +) - before.answers.values.reduce(0, +) - doubleOK
        let doubleRequests = after.requests - before.requests
        let ok = tally.ok.load(ordering: .relaxed)
        let other = tally.other.load(ordering: .relaxed)
        let errors = tally.errors.load(ordering: .relaxed)

        let rate = Double(result.succeeded) / result.window.seconds
        let cpuPerPush = cpu.milliseconds(per: result.succeeded)
        report.add(Figure(scenario: scenario, name: "\(name): pushes answered 200 per second", value: rate, unit: "push/s"))
        if let cpuPerPush {
            report.add(
                Figure(
                    scenario: scenario, name: "\(name): bench-process CPU per push (double + client)", value: cpuPerPush,
                    unit: "ms CPU"))
        }
        cpu.report(into: report, scenario: scenario, what: "bench process (double + \(name))")
        if let busy = machine.cores, let bench = cpu.cores {
            // The machine may be shared: what else ran during the window (other processes, the kernel's own threads).
            report.add(
                Figure(
                    scenario: scenario, name: "\(name): CPU of everything else on the machine in the window",
                    value: max(0, busy - bench), unit: "cores"))
        }
        report.add(
            Figure(
                scenario: scenario, name: "\(name): latency p50 (closed loop, \(inFlight) in flight)",
                value: result.latency.milliseconds(atPercentile: 50), unit: "ms"))
        report.add(
            Figure(
                scenario: scenario, name: "\(name): latency p99", value: result.latency.milliseconds(atPercentile: 99),
                unit: "ms"))
        report.add(
            Figure(
                scenario: scenario, name: "\(name): answers other than 200 + errors, whole run", value: Double(other + errors),
                unit: "count", target: "0", met: other + errors == 0))
        report.add(
            Figure(
                scenario: scenario, name: "\(name): the double's 200s in the window", value: Double(deliveries.delivered),
                unit: "count"))
        let agrees = doubleOK == ok && doubleOther == other && doubleRequests == ok + other
        report.add(
            Figure(
                scenario: scenario, name: "\(name): 200s read by the client = 200s written by the double, whole run",
                value: Double(ok), unit: "count", target: "= \(doubleOK) (double)", met: agrees))
        if other + errors > 0 {
            report.note(
                "\(scenario), \(name): \(other) answers other than 200 and \(errors) errors over the whole run;"
                    + " first: \(result.firstFailure ?? "?")")
        }
        if !agrees {
            report.note(
                "\(scenario), \(name): the client read \(ok) × 200 and \(other) other answers (\(errors) errors);"
                    + " the double received \(doubleRequests) requests and wrote \(doubleOK) × 200 and \(doubleOther) others")
        }
        return ClientFigures(rate: rate, cpuPerPush: cpuPerPush)
    }
}

/// Scenario b2's answers by kind, over a whole run (warm-up included).
private final class AnswerTally: Sendable {
    /// `200`.
    let ok = Atomic(0)
    /// Any other status.
    let other = Atomic(0)
    /// No answer: a connection, stream or deadline error.
    let errors = Atomic(0)
}

extension APNsBaseline.Push {
    /// Request `index`'s fields for `APNsConnection` (which adds the pseudo-headers and `content-length`): the same
    /// as ``request(_:)``, a fresh `apns-id` each time, HPACK-coded as Herald's provider codes them.
    func headers(_ index: Int) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(6)
        headers.add(name: "authorization", value: authorization, indexing: .nonIndexable)
        headers.add(name: "apns-push-type", value: "alert")
        headers.add(name: "apns-topic", value: BenchAPNs.topic)
        headers.add(name: "apns-priority", value: "10")
        headers.add(name: "apns-expiration", value: expiration, indexing: .nonIndexable)
        headers.add(name: "apns-id", value: UUID.random().uuidString.lowercased(), indexing: .nonIndexable)
        return headers
    }
}
