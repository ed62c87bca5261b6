import Foundation
import HeraldAPNs
import HeraldCore
import HeraldServer
import HeraldTesting
import Testing

/// A TestServer whose APNs endpoints are two APNs doubles (production and sandbox) that trust one test CA.
struct APNsTestServer {
    static let topic = "io.herald.tests"

    var server: TestServer
    let production: APNsDouble
    let sandbox: APNsDouble
    let key: TestKey

    static func start(dailyLimit: Int = 150, clock: TestClock = TestClock(Date())) async throws -> APNsTestServer {
        let key = TestKey()
        let certificates = try TestCertificates.make()
        let production = try await APNsDouble.start(
            environment: .production, keys: [.init(key)], topics: [topic], clock: clock, certificates: certificates)
        let sandbox = try await APNsDouble.start(
            environment: .sandbox, keys: [.init(key)], topics: [topic], clock: clock, certificates: certificates)
        var server = try TestServer(dailyLimit: dailyLimit, clock: clock)
        server.configuration.apns = APNsConfiguration(
            key: .file(path: try key.writeP8()), keyID: key.keyID, teamID: key.teamID, topic: topic,
            productionURL: production.baseURL, sandboxURL: sandbox.baseURL, trustedCAPath: production.caPath,
            connectionsPerEnvironment: 1, requestTimeout: .seconds(5))
        return APNsTestServer(server: server, production: production, sandbox: sandbox, key: key)
    }

    func shutdown() async throws {
        try await production.shutdown()
        try await sandbox.shutdown()
    }
}

/// Polls `condition` every 50 ms until it holds or `attempts` run out; returns whether it held.
/// (Waiting for the delivery worker, which runs on its own schedule; nothing is asserted about how long it took.)
func eventually(attempts: Int = 400, _ condition: () async throws -> Bool) async rethrows -> Bool {
    for _ in 0..<attempts {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return false
}
