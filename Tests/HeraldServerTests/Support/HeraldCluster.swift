import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

/// Several real `herald serve` child processes on one PostgreSQL database (a fresh one per cluster, on the server
/// `HERALD_TEST_POSTGRES_URL` names), delivering to one APNs double: how Herald runs behind a load balancer.
final class HeraldCluster: Sendable {
    static let postgresURL: String? = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isPostgresRequired = ProcessInfo.processInfo.environment["HERALD_REQUIRE_POSTGRES"] == "1"

    let apns: APNsDouble
    let instances: [HeraldProcess]
    let ports: [Int]
    let environment: [String: String]
    /// The fresh database, reached directly (not through `proxy`).
    let databaseURL: String
    private let directory: URL

    /// Starts `count` instances named `instance-0`, … with `options` on a fresh database; with `proxy`, the instances
    /// reach the database through it (``FaultProxy``, whose upstream is the test server).
    init(count: Int, options: [String: String] = [:], proxy: FaultProxy? = nil) async throws {
        guard let url = Self.postgresURL else { throw PostgresTestDatabaseMissing() }
        let key = TestKey()
        let topic = "io.herald.cluster"
        apns = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic])
        directory = try TemporaryDirectory.make()
        let database = try await Self.freshDatabase(serverURL: url)
        databaseURL = database
        var reached = database
        if let proxy {
            var components = try #require(URLComponents(string: database))
            components.host = "127.0.0.1"
            components.port = proxy.port
            reached = try #require(components.string)
        }
        environment = HeraldProcess.serveEnvironment([
            "HERALD_DATABASE_URL": reached, "HERALD_LOG_LEVEL": "info",
            "HERALD_APNS_KEY_PATH": try key.writeP8(in: directory), "HERALD_APNS_KEY_ID": key.keyID,
            "HERALD_APNS_TEAM_ID": key.teamID, "HERALD_APNS_TOPIC": topic,
            "HERALD_APNS_PRODUCTION_URL": apns.baseURL, "HERALD_APNS_SANDBOX_URL": apns.baseURL,
            "HERALD_APNS_CA_PATH": apns.caPath,
        ].merging(options) { _, new in new })
        var instances: [HeraldProcess] = []
        var ports: [Int] = []
        for index in 0..<count {
            let instance = try await HeraldProcess(
                environment: environment.merging(["HERALD_INSTANCE_ID": "instance-\(index)"]) { _, new in new })
            instances.append(instance)
            ports.append(try await instance.port())
        }
        self.instances = instances
        self.ports = ports
    }

    /// `http://127.0.0.1:PORT` of instance `index`.
    func base(_ index: Int) -> String { "http://127.0.0.1:\(ports[index])" }

    /// Stops every instance still running (SIGTERM) and the double. An instance that does not stop fails the test
    /// with the end of its log (``HeraldProcess/waitForExit(within:sourceLocation:)``), rather than hanging it.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for instance in instances { instance.kill(SIGTERM) }
        for instance in instances { _ = await instance.waitForExit(sourceLocation: sourceLocation) }
        try await apns.shutdown()
    }

    /// A proxy to the test server (`HERALD_TEST_POSTGRES_URL`), to hand to ``init(count:options:proxy:)``.
    static func postgresProxy() async throws -> FaultProxy {
        guard let url = postgresURL else { throw PostgresTestDatabaseMissing() }
        let components = try #require(URLComponents(string: url))
        return try await FaultProxy.start(upstreamHost: components.host ?? "127.0.0.1", upstreamPort: components.port ?? 5432)
    }

    /// Creates an empty database next to the one `serverURL` names and returns its URL.
    static func freshDatabase(serverURL: String) async throws -> String {
        let name = "herald_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let client = PostgresClient(configuration: try PostgresURL(serverURL).clientConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            _ = try await client.query("CREATE DATABASE \(unescaped: String(name))")
        }
        var components = try #require(URLComponents(string: serverURL))
        components.path = "/" + name
        return try #require(components.string)
    }
}

struct PostgresTestDatabaseMissing: Error, CustomStringConvertible {
    var description: String { "HERALD_TEST_POSTGRES_URL is not set" }
}

/// One HTTP exchange with a child process.
struct ClusterAnswer: Sendable {
    var status: UInt
    var json: JSONObject
}

func clusterRequest(
    _ method: HTTPMethod, _ url: String, body: String? = nil, headers: [(String, String)] = [], timeout: TimeAmount = .seconds(30)
) async throws -> ClusterAnswer {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: timeout)
    let bytes = try await response.body.collect(upTo: 1 << 20)
    let json = (try? JSONValue.decode(Data(bytes.readableBytesView)).objectValue) ?? [:]
    return ClusterAnswer(status: response.status.code, json: json)
}

/// `Authorization: Basic` for a device's owner credentials.
func basicAuthorization(_ registration: Registration) -> (String, String) {
    ("Authorization", "Basic " + Data("\(registration.userID):\(registration.secret)".utf8).base64EncodedString())
}
