import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Synchronization

/// The in-process APNs double Herald delivers to (HTTP/2 + TLS, real ES256 provider-token checks), in its
/// counters-only mode, with a recorder of when it answered `200` for each `apns-id`.
struct BenchAPNs: BenchProvider {
    static let topic = "io.herald.bench"

    let key: TestKey
    let keyPath: String
    let double: APNsDouble
    let recorder: DeliveryRecorder

    static func start(in directory: URL) async throws -> BenchAPNs {
        let key = TestKey()
        let recorder = DeliveryRecorder()
        var options = APNsDouble.Options()
        options.activityLog = .countersOnly
        options.perDeviceTokenLimit = nil  // the benchmark sends many notifications to few devices
        options.answerObserver = { status, apnsID in recorder.answered(status: status, apnsID: apnsID) }
        let double = try await APNsDouble.start(
            environment: .production, keys: [.init(key)], topics: [topic], options: options)
        return BenchAPNs(key: key, keyPath: try key.writeP8(in: directory), double: double, recorder: recorder)
    }

    /// The `HERALD_APNS_*` options that point Herald at the double.
    var heraldEnvironment: [String: String] {
        [
            "HERALD_APNS_KEY_PATH": keyPath, "HERALD_APNS_KEY_ID": key.keyID, "HERALD_APNS_TEAM_ID": key.teamID,
            "HERALD_APNS_TOPIC": Self.topic, "HERALD_APNS_PRODUCTION_URL": double.baseURL,
            "HERALD_APNS_SANDBOX_URL": double.baseURL, "HERALD_APNS_CA_PATH": double.caPath,
        ]
    }

    var name: String { "APNs" }
    var platform: Platform { .apns }
    var duplicateMeaning: String { "a 2nd APNs 200 for one apns-id" }

    /// Answers `200` written so far.
    var delivered: Int { double.counters.accepted }

    /// Herald sends each notification with `apns-id` = its notification id: the recorder's keys are the ids.
    func startLedger(store: String) -> any DeliveryLedger { APNsLedger(self) }
}

/// The APNs double's `200`s by `apns-id` (``DeliveryRecorder``), which is Herald's notification id.
struct APNsLedger: DeliveryLedger {
    let apns: BenchAPNs
    let before: Int

    /// Starts the recorder.
    init(_ apns: BenchAPNs) {
        self.apns = apns
        before = apns.delivered
        apns.recorder.start()
    }

    func missing(from ids: Set<String>) -> Int { apns.recorder.missing(from: ids) }

    func stop() -> (delivered: Set<String>, answers: Int) {
        (Set(apns.recorder.stop().keys), apns.delivered - before)
    }
}

/// When the double answered `200` for each `apns-id` (= Herald's notification id), while recording is on.
final class DeliveryRecorder: Sendable {
    private let isRecording = Atomic(false)
    private let times = Mutex<[String: ContinuousClock.Instant]>([:])

    func start() {
        times.withLock { $0.removeAll(keepingCapacity: true) }
        isRecording.store(true, ordering: .releasing)
    }

    /// Stops recording; returns the first `200` time of each `apns-id`.
    @discardableResult
    func stop() -> [String: ContinuousClock.Instant] {
        isRecording.store(false, ordering: .releasing)
        return times.withLock { $0 }
    }

    /// The number of distinct `apns-id`s answered `200` since `start()`.
    var count: Int { times.withLock { $0.count } }

    /// How many of `ids` have no `200` yet.
    func missing(from ids: Set<String>) -> Int {
        times.withLock { times in ids.count { times[$0] == nil } }
    }

    func answered(status: Int, apnsID: String) {
        guard status == 200, isRecording.load(ordering: .acquiring) else { return }
        let now = ContinuousClock.now
        times.withLock { times in
            if times[apnsID] == nil { times[apnsID] = now }
        }
    }
}

/// The double's own limit: pushes per second it takes from a bare AsyncHTTPClient HTTP/2 client (no Herald code),
/// with a valid provider token, over the same number of connections and streams in flight as Herald's defaults.
enum APNsBaseline {
    /// The payload Herald builds for the benchmark's notify body (docs/payloads.md), byte for byte.
    static let payload = ByteBuffer(
        string: #"{"aps":{"alert":{"body":"Front Door","title":"Person detected"},"mutable-content":1,"sound":"default"},"#
            + #""open":{"id":"1739987.123-abcdef","type":"frigate_event"},"#
            + #""snapshot":{"id":"1739987.123-abcdef","type":"frigate_event"}}"#
    )

    static func measure(
        _ apns: BenchAPNs, connections: Int, inFlight: Int, warmup: Duration, duration: Duration, cpu: CPUWindow
    ) async throws -> (result: ClosedLoopResult, accepted: Int) {
        let push = try Push(apns)
        let deliveries = DeliveryWindow(apns)
        let result = try await DoubleBaseline.withClients(connections, trusting: apns.double.caPath) { clients in
            await DoubleBaseline.run(
                clients, double: apns.name, inFlight: inFlight, warmup: warmup, duration: duration,
                observers: [cpu, deliveries]
            ) { index in push.request(index) }
        }
        return (result, deliveries.delivered)
    }

    /// What a baseline client sends: the same provider token, device tokens, headers and payload for every client
    /// (AsyncHTTPClient's request here, `APNsConnection`'s headers in scenario b2).
    struct Push: Sendable {
        /// `bearer <provider token>`, one token (signed once) for the whole run.
        let authorization: String
        /// 64 device tokens (64 hex digits each), used in turn.
        let tokens: [String]
        /// `apns-expiration`: a day from the start.
        let expiration: String
        /// `https://127.0.0.1:<port>`.
        let baseURL: String

        init(_ apns: BenchAPNs) throws {
            authorization = "bearer \(try APNsBaseline.providerToken(apns.key))"
            tokens = (0..<64).map { DeviceIdentity.hex(SHA256.hash(data: Data("baseline-token-\($0)".utf8))) }
            expiration = String(Int(Date().timeIntervalSince1970) + 86_400)
            baseURL = apns.double.baseURL
        }

        /// `/3/device/<token>` of request `index`.
        func path(_ index: Int) -> String { "/3/device/" + tokens[index % tokens.count] }

        /// Request `index` for AsyncHTTPClient (a fresh `apns-id` each time).
        func request(_ index: Int) -> HTTPClientRequest {
            var request = HTTPClientRequest(url: baseURL + path(index))
            request.method = .POST
            request.headers.add(name: "authorization", value: authorization)
            request.headers.add(name: "apns-push-type", value: "alert")
            request.headers.add(name: "apns-topic", value: BenchAPNs.topic)
            request.headers.add(name: "apns-priority", value: "10")
            request.headers.add(name: "apns-expiration", value: expiration)
            request.headers.add(name: "apns-id", value: UUID.random().uuidString.lowercased())
            request.body = .bytes(payload)
            return request
        }
    }

    /// An ES256 provider token: `{"alg":"ES256","kid":…}.{"iss":…,"iat":…}`, raw r‖s signature, base64url.
    static func providerToken(_ key: TestKey) throws -> String {
        let header = try JSONValue.object(["alg": "ES256", "kid": .string(key.keyID)]).encoded()
        let claims = try JSONValue.object([
            "iss": .string(key.teamID), "iat": .int(Int(Date().timeIntervalSince1970)),
        ]).encoded()
        let input = base64URL(header) + "." + base64URL(claims)
        let signature = try key.privateKey.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + base64URL(signature)
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
