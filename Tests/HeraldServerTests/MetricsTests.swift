import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import Subprocess
import SystemPackage
import Testing

@testable import HeraldServer

/// Issue 13, item 2: `GET /metrics`, scraped over HTTP after real sends, its counters checked and its text held to
/// `promtool check metrics`. Each server has a registry of its own, so the counts are exact even with tests in parallel.
@Suite("Prometheus metrics")
struct MetricsTests {
    @Test func sendsAndDeliveriesAreCountedByDialectAndProviderAndThePromtoolLintPasses() async throws {
        let apns = try await APNsTestServer.start()
        let deadToken = Fixtures.apnsToken(0x5d)
        apns.production.markUnregistered(deadToken)
        let text = try await apns.server.run { client in
            let first = try await client.register(token: Fixtures.apnsToken(0x51))
            let second = try await client.register(token: Fixtures.apnsToken(0x52))
            let dead = try await client.register(token: deadToken)
            #expect(try await client.notify(first.userID).status == .created)
            #expect(try await client.notify(second.userID).status == .created)
            #expect(try await client.post("/api/push/homeassistant", homeAssistantBody(first.userID)).status == .created)
            #expect(try await client.notify(dead.userID).status == .gone)
            #expect(try await client.notify(Secrets.random256BitHex()).status == .notFound)
            #expect(try await client.post("/api/push/notify", "not json").status == .badRequest)

            let response = try await client.execute(uri: "/metrics", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            let text = String(decoding: response.body.readableBytesView, as: UTF8.self)
            for secret in [first.userID, first.secret, second.userID, dead.userID, Fixtures.apnsToken(0x51), deadToken] {
                #expect(!text.contains(secret), "a credential or token in the exposition")
            }
            return text
        }
        try await apns.shutdown()

        let samples = Exposition(text)
        #expect(samples["herald_notifications_accepted_total{dialect=\"notify\"}"] == 2)
        #expect(samples["herald_notifications_accepted_total{dialect=\"homeassistant\"}"] == 1)
        #expect(samples["herald_notifications_accepted_total{dialect=\"notifications\"}"] == 0)
        #expect(samples["herald_notifications_rejected_total{dialect=\"notify\",reason=\"device_must_reregister\"}"] == 1)
        #expect(samples["herald_notifications_rejected_total{dialect=\"notify\",reason=\"unknown_user\"}"] == 1)
        #expect(samples["herald_notifications_rejected_total{dialect=\"notify\",reason=\"malformed_json\"}"] == 1)
        #expect(samples["herald_notifications_delivered_total{provider=\"apns\"}"] == 3)
        #expect(samples["herald_notifications_delivered_total{provider=\"websocket\"}"] == 0)
        #expect(samples["herald_notifications_failed_total{provider=\"apns\",reason=\"dead_token\"}"] == 1)
        #expect(samples["herald_notifications_retried_total{provider=\"apns\"}"] == 0)
        #expect(samples["herald_notifications_expired_total{provider=\"apns\"}"] == 0)
        #expect(samples["herald_provider_responses_total{provider=\"apns\",status=\"200\",reason=\"none\"}"] == 3)
        #expect(samples["herald_provider_responses_total{provider=\"apns\",status=\"410\",reason=\"Unregistered\"}"] == 1)
        #expect(samples["herald_provider_request_duration_seconds_count{provider=\"apns\"}"] == 4)
        // Four accepts and four outcomes went through the group commit, in however many transactions.
        #expect(samples["herald_store_commit_batch_entries_sum"] == 8)
        #expect((samples["herald_store_commit_batch_entries_count"] ?? 0) >= 1)
        #expect(samples["herald_store_commit_duration_seconds_count"] == samples["herald_store_commit_batch_entries_count"])
        #expect(samples["herald_outbox_pending"] == 0)
        #expect(samples["herald_outbox_due"] == 0)
        #expect(samples["herald_devices"] == 3)
        #expect(samples["herald_delivery_slots"] == 1_024)
        #expect(samples["herald_delivery_slots_in_use"] == 0)
        #expect(samples["herald_websocket_connections"] == 0)
        #expect(samples["herald_build_info{version=\"\(HeraldVersion.current)\"}"] == 1)
        #expect((samples["process_cpu_seconds_total"] ?? 0) > 0)
        #expect((samples["process_resident_memory_bytes"] ?? 0) > 0)
        #expect((samples["process_open_fds"] ?? 0) > 0)
        #expect((samples["process_start_time_seconds"] ?? 0) > 1_700_000_000)

        try await Promtool.check(text)
    }

    @Test func pendingNotificationsAndRateLimitsAreCounted() async throws {
        // No APNs: an Apple device's notifications stay pending (parked); the second of the day is refused.
        try await TestServer(dailyLimit: 1).run { client in
            let device = try await client.register()
            #expect(try await client.notify(device.userID).status == .created)
            #expect(try await client.notify(device.userID).status == .tooManyRequests)
            #expect(try await client.post("/api/push/homeassistant", homeAssistantBody(device.userID)).status == .tooManyRequests)
            let samples = Exposition(try await client.scrape())
            #expect(samples["herald_notifications_accepted_total{dialect=\"notify\"}"] == 1)
            #expect(samples["herald_notifications_rejected_total{dialect=\"notify\",reason=\"rate_limited\"}"] == 1)
            #expect(samples["herald_notifications_rejected_total{dialect=\"homeassistant\",reason=\"rate_limited\"}"] == 1)
            #expect(samples["herald_rate_limited_requests_total{limit=\"daily_quota\"}"] == 2)
            #expect(samples["herald_rate_limited_requests_total{limit=\"registrations\"}"] == 0)
            // The notification and the "quota used up" notice wait for a provider.
            #expect(samples["herald_outbox_pending"] == 2)
        }
    }

    @Test func webSocketConfirmationsAreCountedConfirmedOrTimedOut() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = DescribedMetricsFactory(registry: registry, descriptions: ServerMetrics.all)
        let device = Fixtures.device(platform: .websocket).device
        // A client that confirms what it gets (the hub waits up to a minute for it)…
        let patient = WebSocketHub(confirmTimeout: .seconds(60), renderers: payloadRenderers, metrics: factory, logger: Logger(label: "test"))
        let events = AsyncStream.makeStream(of: String.self)
        let subscribed = patient.subscribe(
            deviceID: device.id, messageID: 1, supportsConfirm: true, socket: HandingOverSocket { events.continuation.yield($0) })
        let subscription = try #require(subscribed)
        let confirmer = Task {
            for await event in events.stream {
                let confirmID = try #require(
                    JSONValue.decode(Data(event.utf8)).objectValue?["event"]?.objectValue?["hass_confirm_id"]?.stringValue)
                #expect(patient.confirm(confirmID, deviceID: device.id))
                return
            }
        }
        #expect(await patient.deliver(Fixtures.notification(for: device), to: device))
        try await confirmer.value
        patient.unsubscribe(subscription, deviceID: device.id)
        // …and one that never confirms (this hub waits 50 ms).
        let impatient = WebSocketHub(confirmTimeout: .milliseconds(50), renderers: payloadRenderers, metrics: factory, logger: Logger(label: "test"))
        _ = impatient.subscribe(deviceID: device.id, messageID: 1, supportsConfirm: true, socket: HandingOverSocket { _ in })
        #expect(await impatient.deliver(Fixtures.notification(for: device), to: device) == false)

        let samples = Exposition(registry.emitToString())
        #expect(samples["herald_websocket_confirmations_total{result=\"confirmed\"}"] == 1)
        #expect(samples["herald_websocket_confirmations_total{result=\"timed_out\"}"] == 1)
    }

    /// Issue 29, item 7: only `/metrics` itself is the metrics page, the path the reverse-proxy rule in
    /// docs/operations.md denies (`location /metrics`, which covers `/metrics/` and a query too).
    @Test func onlyTheMetricsPathItselfServesMetrics() async throws {
        try await TestServer().run { client in
            let port = try #require(client.port)
            for (target, status) in [("/metrics", 200), ("/metrics?x=1", 200), ("/metrics/", 404), ("//metrics", 404), ("/metrics//", 404)] {
                let connection = try RawConnection(port: port)
                connection.send("GET \(target) HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
                let answer = RawAnswer.all(in: await connection.readUntilClosed().bytes).first
                #expect(answer?.status == status, "\(target)")
                #expect(answer?.body.contains("herald_") == (status == 200), "\(target)")
            }
        }
        let operations = try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        #expect(operations.contains("    location /metrics {"))
        #expect(!operations.contains("location = /metrics {"))  // an exact rule would leave /metrics/ open
    }

    @Test func metricsCanBeTurnedOff() async throws {
        var server = try TestServer()
        server.configuration.metrics = false
        try await server.run { client in
            let response = try await client.execute(uri: "/metrics", method: .get)
            #expect(response.status == .notFound)
            #expect(try response.json()["code"] == "not_found")
        }
    }

    @Test func aSeparateMetricsPortTakesMetricsOffTheMainPort() async throws {
        let herald = try await HeraldProcess(
            environment: HeraldProcess.serveEnvironment(["HERALD_METRICS_PORT": "0", "HERALD_METRICS_HOST": "127.0.0.1"]))
        let port = try await herald.port()
        #expect(await herald.waitForOutput(containing: "Metrics listening on 127.0.0.1:"))
        let log = herald.log
        let range = try #require(log.range(of: "Metrics listening on 127.0.0.1:"))
        let metricsPort = try #require(Int(log[range.upperBound...].prefix(while: \.isNumber)))
        #expect(metricsPort != port)
        // Hummingbird's start-up line stays the main listener's alone (scripts read the port from it).
        #expect(log.components(separatedBy: "Server started and listening on").count == 2)

        let main = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(30))
        #expect(main.status == .notFound)
        let separate = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(30))
        #expect(separate.status == .ok)
        let body = try await separate.body.collect(upTo: 1 << 20)
        let text = String(buffer: body)
        #expect(Exposition(text)["herald_build_info{version=\"\(HeraldVersion.current)\"}"] == 1)
        try await Promtool.check(text)
        let other = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/healthz"), timeout: .seconds(30))
        #expect(other.status == .notFound)
        herald.kill(SIGTERM)
        #expect(await herald.waitForExit() == 0)
    }

    @Test func theMetricsOptionsAreCheckedAtStartup() throws {
        let defaults = try ConfigurationLoader.load(file: nil, environment: [:])
        #expect(defaults.metrics == true)
        #expect(defaults.metricsPort == nil)
        let separate = try ConfigurationLoader.load(
            file: nil, environment: ["HERALD_METRICS_PORT": "9464", "HERALD_METRICS_HOST": "0.0.0.0"])
        #expect(separate.metricsPort == 9464)
        #expect(separate.metricsHost == "0.0.0.0")
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_METRICS": "off"]).metrics == false)
        let refusals: [([String: String], String)] = [
            (["HERALD_METRICS": "maybe"], "HERALD_METRICS: \"maybe\" is not one of on, off (or true, false)"),
            (
                ["HERALD_METRICS_HOST": "0.0.0.0"],
                "HERALD_METRICS_HOST: set HERALD_METRICS_PORT too (the metrics listener's port)"
            ),
            (
                ["HERALD_METRICS": "off", "HERALD_METRICS_PORT": "9464"],
                "HERALD_METRICS_PORT: metrics are off (HERALD_METRICS=off); set one or the other"
            ),
            (["HERALD_METRICS_PORT": "8080"], "HERALD_METRICS_PORT: must differ from HERALD_PORT (8080)"),
            (["HERALD_METRICS_PORT": "70000"], "HERALD_METRICS_PORT: \"70000\" is not a whole number from 0 to 65535"),
        ]
        for (environment, message) in refusals {
            #expect(throws: ConfigurationError(message)) { try ConfigurationLoader.load(file: nil, environment: environment) }
        }
    }

    @Test func everyMetricIsDocumentedAndOnTheDashboard() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let operations = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let dashboard = try String(contentsOf: root.appendingPathComponent("docs/grafana/herald.json"), encoding: .utf8)
        #expect(try JSONSerialization.jsonObject(with: Data(dashboard.utf8)) is [String: Any])
        let names = ServerMetrics.all.map(\.name) + ProcessMetrics.descriptions.map(\.name)
        for name in names {
            #expect(operations.contains("`\(name)`"), "docs/operations.md does not list \(name)")
        }
        for description in ServerMetrics.all {
            #expect(description.name.hasPrefix("herald_"))
            #expect((description.kind == .counter) == description.name.hasSuffix("_total"), "\(description.name)")
            #expect(!description.labels.contains { ["user_id", "token", "device", "id"].contains($0) })
        }
        // Every metric the dashboard queries exists.
        let queried = Set(dashboard.matches(of: /(herald|process)_[a-z_]+/).map { String($0.output.0) })
        let known = Set(names.flatMap { [$0, $0 + "_bucket", $0 + "_count", $0 + "_sum"] })
        #expect(queried.subtracting(known).isEmpty, "unknown metrics on the dashboard: \(queried.subtracting(known).sorted())")
        #expect(queried.count >= 15)
    }
}

extension TestClientProtocol {
    /// `GET /metrics` as text.
    func scrape() async throws -> String {
        let response = try await execute(uri: "/metrics", method: .get)
        #expect(response.status == .ok)
        return String(decoding: response.body.readableBytesView, as: UTF8.self)
    }
}

/// The samples of an exposition, by series as written (`name{label="value",…}`).
struct Exposition {
    private var samples: [String: Double] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
    }

    subscript(_ series: String) -> Double? { samples[series] }
}

/// `promtool check metrics` (Debian's `prometheus` package). Without promtool the check says loudly that it did not
/// run; `HERALD_REQUIRE_PROMTOOL=1` (CI, `.ci/run`) makes that a failure.
enum Promtool {
    static var path: String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func check(_ exposition: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let path else {
            if ProcessInfo.processInfo.environment["HERALD_REQUIRE_PROMTOOL"] == "1" {
                Issue.record(
                    "promtool is not installed (apt-get install prometheus) and HERALD_REQUIRE_PROMTOOL=1",
                    sourceLocation: sourceLocation)
            } else {
                print("⚠️  promtool check metrics DID NOT RUN: promtool is not installed (apt-get install prometheus)")
            }
            return
        }
        let result = try await Subprocess.run(
            .path(FilePath(path)), arguments: ["check", "metrics"], input: .string(exposition),
            output: .string(limit: 1 << 20), error: .combinedWithOutput)
        let output = result.standardOutput
        #expect(result.terminationStatus.isSuccess, "promtool check metrics:\n\(output)", sourceLocation: sourceLocation)
        #expect(
            output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "promtool check metrics:\n\(output)",
            sourceLocation: sourceLocation)
    }
}
