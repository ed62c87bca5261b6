import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1

/// The in-process FCM double Herald delivers to in scenario 1's run for FCM devices (HTTP/2 + TLS, Google's OAuth
/// token endpoint verifying RS256 assertions, every message validated as FCM does), as the tests use it: it keeps a
/// log of every request and accepted message (``FCMLedger`` reads the messages; the log is cleared before each run).
struct BenchFCM: BenchProvider {
    static let projectID = "herald-bench"

    let double: FCMDouble
    /// The service-account file Herald is configured with (`token_uri` points at the double).
    let serviceAccountPath: String

    static func start(in directory: URL) async throws -> BenchFCM {
        let double = try await FCMDouble.start(projectID: projectID)
        let file = directory.appendingPathComponent("fcm-service-account.json")
        try double.serviceAccountJSON.write(to: file, atomically: true, encoding: .utf8)
        return BenchFCM(double: double, serviceAccountPath: file.path)
    }

    var name: String { "FCM" }
    var platform: Platform { .fcm }
    var duplicateMeaning: String { "an FCM 200 that no notification's provider_message_id names" }

    /// The `HERALD_FCM_*` options that point Herald at the double.
    var heraldEnvironment: [String: String] {
        [
            "HERALD_FCM_SERVICE_ACCOUNT": serviceAccountPath, "HERALD_FCM_BASE_URL": double.baseURL,
            "HERALD_FCM_CA_PATH": double.caPath,
        ]
    }

    /// Messages answered `200` so far.
    var delivered: Int { double.counters.sendsAccepted }

    func startLedger(store: String) -> any DeliveryLedger { FCMLedger(self, store: store) }
}

/// The FCM double's `200`s matched to Herald's notifications. An FCM message carries no notification id, but the
/// double answers each with a name of its own (`projects/…/messages/<19 digits>`), and Herald stores the name of the
/// send that succeeded as the notification's `provider_message_id`, which is read from its SQLite file. A notification
/// is delivered when the double accepted a message under its stored name; any other message the double accepted was
/// a second send of one of them (a duplicate). Starting the ledger clears the double's log, so that it holds this
/// run's messages only.
struct FCMLedger: DeliveryLedger {
    let fcm: BenchFCM
    let store: String
    private let before: Int

    init(_ fcm: BenchFCM, store: String) {
        self.fcm = fcm
        self.store = store
        fcm.double.resetLog()
        before = fcm.delivered
    }

    func missing(from ids: Set<String>) throws -> Int {
        // While the double has accepted fewer messages than there are ids, that many at least are missing; the store
        // is read only once enough have come.
        let answers = fcm.delivered - before
        guard answers >= ids.count else { return ids.count - answers }
        let delivered = try stop().delivered
        return ids.count { !delivered.contains($0) }
    }

    /// Nothing to stop (the double keeps its log): the notifications delivered so far and the messages accepted.
    func stop() throws -> (delivered: Set<String>, answers: Int) {
        let messages = fcm.double.acceptedMessages
        let names = Set(messages.map(\.name))
        let stored = try Seeder.providerMessageIDs(path: store)
        return (Set(stored.compactMap { names.contains($0.value) ? $0.key : nil }), messages.count)
    }
}

/// The FCM double's own limit: `messages:send` requests per second it answers `200` from a bare AsyncHTTPClient
/// (no Herald code) over HTTP/2, with one access token obtained once from its token endpoint, one client as Herald's
/// FCM provider has, and as many requests in flight as Herald has delivery slots.
enum FCMBaseline {
    static func measure(
        _ fcm: BenchFCM, connections: Int, inFlight: Int, warmup: Duration, duration: Duration, cpu: CPUWindow
    ) async throws -> (result: ClosedLoopResult, accepted: Int) {
        let bodies = try (0..<64).map { try requestBody(token: DeviceIdentity.fcmToken($0, salt: "baseline")) }
        let url = fcm.double.sendURL
        let deliveries = DeliveryWindow(fcm)
        let result = try await DoubleBaseline.withClients(connections, trusting: fcm.double.caPath) { clients in
            let accessToken = try await accessToken(fcm, client: clients[0])
            return await DoubleBaseline.run(
                clients, double: fcm.name, inFlight: inFlight, warmup: warmup, duration: duration,
                observers: [cpu, deliveries]
            ) { index in
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "authorization", value: "Bearer \(accessToken)")
                request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
                request.body = .bytes(bodies[index % bodies.count])
                return request
            }
        }
        return (result, deliveries.delivered)
    }

    /// The request Herald sends for the benchmark's notify body (docs/payloads.md, "`POST /api/push/notify` → FCM"),
    /// encoded by the same JSON writer: `android.ttl` as a notification sent at once has it (the default TTL, a day).
    static func requestBody(token: String) throws -> ByteBuffer {
        let target = try JSONValue.object(["type": "frigate_event", "id": "1739987.123-abcdef"]).encoded()
        let targetText = JSONValue.string(String(decoding: target, as: UTF8.self))
        let message: JSONObject = [
            "notification": ["title": "Person detected", "body": "Front Door"],
            "data": ["snapshot": targetText, "open": targetText],
            "android": ["priority": "HIGH", "notification": ["sound": "default"], "ttl": "86399s"],
            "token": .string(token),
        ]
        return ByteBuffer(bytes: try JSONValue.object(["message": .object(message)]).encoded())
    }

    /// An access token from the double's token endpoint, for a correct assertion of its service account.
    static func accessToken(_ fcm: BenchFCM, client: HTTPClient) async throws -> String {
        let assertion = try fcm.double.serviceAccount.assertion(tokenURI: fcm.double.tokenURI)
        var request = HTTPClientRequest(url: fcm.double.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 65_536)
        guard response.status.code == 200,
            let token = try? JSONValue.decode(Data(body.readableBytesView)).objectValue?["access_token"]?.stringValue
        else {
            throw BenchFailure(
                description: "the FCM double's token endpoint answered \(response.status.code) \(String(buffer: body))")
        }
        return token
    }
}
