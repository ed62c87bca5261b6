import Foundation
import HeraldAPNs
import HeraldCore
import HeraldServer
import HeraldTesting
import Testing

/// A TestServer whose APNs endpoints are two APNs doubles (production and sandbox) that trust one test CA.
struct APNsTestServer {
    static let topic = "io.herald.tests"
    /// The delivery wait of these servers: far longer than any attempt against the double takes.
    static let outcomeWait: Duration = .seconds(60)

    var server: TestServer
    let production: APNsDouble
    let sandbox: APNsDouble
    let key: TestKey

    static func start(dailyLimit: Int = 150, clock: TestClock = TestClock(Date())) async throws -> APNsTestServer {
        let key = TestKey()
        // Both present the process's test CA (TestCertificates.shared), so trusting one's CA file trusts both.
        let production = try await APNsDouble.start(environment: .production, keys: [.init(key)], topics: [topic], clock: clock)
        let sandbox = try await APNsDouble.start(environment: .sandbox, keys: [.init(key)], topics: [topic], clock: clock)
        var server = try TestServer(dailyLimit: dailyLimit, clock: clock)
        // The answer of a send is the outcome of its first attempt when that attempt ends within the wait, and the
        // double answers at once: wait long enough for a loaded machine (the suite runs in parallel on few cores),
        // so that "delivered", 410 and 502 answers do not depend on timing. The answer comes when the attempt ends.
        server.configuration.deliveryWait = outcomeWait
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

extension APNsTestServer {
    /// The push the production double accepted for the notification `id` (its `apns-id`), waiting for the delivery
    /// delivery engine if it has not arrived yet; `nil` when it never does.
    func acceptedPush(id: String?) async -> APNsDouble.RecordedRequest? {
        var found: APNsDouble.RecordedRequest?
        _ = await eventually {
            found = production.acceptedPushes.first { $0.header("apns-id") == id }
            return found != nil
        }
        return found
    }

    /// The JSON payload of ``acceptedPush(id:)``.
    func acceptedPayload(id: String?) async throws -> JSONObject? {
        guard let push = await acceptedPush(id: id) else { return nil }
        return try JSONValue.decode(push.body).objectValue
    }
}
