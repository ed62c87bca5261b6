import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Starts Herald on a free loopback port with its own SQLite file and runs a test against it over real HTTP.
struct TestServer {
    var configuration: HeraldConfiguration
    let databasePath: String
    let clock: TestClock

    init(dailyLimit: Int = 150, databasePath: String? = nil, clock: TestClock = TestClock(Date())) throws {
        self.databasePath = try databasePath ?? TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        self.clock = clock
        configuration = HeraldConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.databaseURL = "sqlite:" + self.databasePath
        configuration.dailyLimit = dailyLimit
        configuration.logLevel = .warning
        configuration.deliveryWait = .seconds(5)
        // The store's deadline is what StoreDeadlineTests and StoreFailureTests set out to pass; for every other test a
        // commit that waits more than 3 s for a busy two-core machine is slow, not failed (a full run answered 503 to
        // dozens of concurrent accepts at 3 s).
        configuration.storeTimeout = .seconds(120)
        // The same for the connection deadlines (ConnectionHardeningTests set theirs): the test client's one keep-alive
        // connection once sat past a deadline while a loaded machine kept the test from its next request, and the
        // request then met a closed channel.
        configuration.connectionLimits.headerTimeout = .seconds(120)
        configuration.connectionLimits.bodyTimeout = .seconds(120)
        configuration.connectionLimits.idleTimeout = .seconds(600)
        // And `/readyz`'s 800 ms for the store's answer: a full run once answered a fresh server's /readyz 503.
        configuration.readinessTimeout = .seconds(60)
    }

    /// The store the server uses, when the test wants to watch it (otherwise one is opened from `databaseURL`).
    var store: (any HeraldStore)?

    /// Runs `test` with a client connected to a live server.
    func run<Value: Sendable>(_ test: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        let app = try await buildApplication(configuration, clock: clock, store: store)
        return try await PatientLiveTest.run(app, test)
    }

    /// A second connection to the server's SQLite file, to look at what was stored.
    func openStore() throws -> SQLiteStore { try SQLiteStore(path: databasePath) }

    /// How these notifications stand in the store (status, attempts, next attempt, lease): what a failed delivery
    /// expectation reports.
    func outbox(of ids: [String]) async throws -> [String] {
        let store = try openStore()
        var lines: [String] = []
        for id in ids {
            guard let uuid = UUID(uuidString: id), let notification = try await store.notification(id: uuid) else {
                lines.append("\(id): not stored")
                continue
            }
            let lease = try await store.lease(of: uuid).map { "\($0.owner) until \($0.expiresAt)" } ?? "none"
            lines.append(
                "\(id): \(notification.status.rawValue), \(notification.attempts) attempts, next at \(notification.nextAttemptAt), lease \(lease)")
        }
        try await store.close()
        return lines
    }
}

/// A registered device as the API returned it.
struct Registration: Sendable {
    var userID: String
    var secret: String

    var basic: HTTPFields {
        [.authorization: "Basic " + Data("\(userID):\(secret)".utf8).base64EncodedString()]
    }
    var bearer: HTTPFields { [.authorization: "Bearer \(userID)"] }
}

extension TestClientProtocol {
    /// Sends `body` (JSON text, sent as is) with `Content-Type: application/json`.
    func post(_ uri: String, _ body: String, headers: HTTPFields = [:], method: HTTPRequest.Method = .post) async throws -> TestResponse {
        var fields = headers
        fields[.contentType] = "application/json"
        return try await execute(uri: uri, method: method, headers: fields, body: ByteBuffer(string: body))
    }

    /// Registers an APNs device and returns its credentials.
    func register(token: String = Fixtures.apnsToken(), environment: String = "production") async throws -> Registration {
        let response = try await post("/api/push/register", #"{"token": "\#(token)", "environment": "\#(environment)"}"#)
        #expect(response.status == .created)
        let body = try response.json()
        return Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue))
    }

    /// Registers `count` APNs devices (tokens 1, 2, …) and returns their USER_IDs. The double allows 100 pushes per
    /// device token per 10 s, as APNs limits one device: tests that send many spread them over a few devices.
    func registerDevices(_ count: Int) async throws -> [String] {
        var userIDs: [String] = []
        for device in 1...count { userIDs.append(try await register(token: Fixtures.apnsToken(device)).userID) }
        return userIDs
    }

    /// The seed's notify body for `userID` with the given extra members.
    func notify(_ userID: String, title: String = "Motion", body: String = "Garden", extra: String = "") async throws -> TestResponse {
        try await post("/api/push/notify", #"{"user_id": "\#(userID)", "title": "\#(title)", "body": "\#(body)"\#(extra)}"#)
    }
}

/// The `RateLimit-Limit` and `RateLimit-Remaining` headers of a send answer.
struct RateLimitHeaders: Equatable {
    var limit: Int
    var remaining: Int
}

extension TestResponse {
    /// The `RateLimit-*` headers, `nil` when the answer has none (all three must be there, `RateLimit-Reset` in seconds).
    var rateLimit: RateLimitHeaders? {
        guard let limit = headers[.init("RateLimit-Limit")!].flatMap(Int.init),
            let remaining = headers[.init("RateLimit-Remaining")!].flatMap(Int.init),
            headers[.init("RateLimit-Reset")!].flatMap(Int.init) != nil
        else { return nil }
        return RateLimitHeaders(limit: limit, remaining: remaining)
    }

    /// The body as a JSON object; fails the test when it is not one or the content type is not JSON.
    func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONObject {
        #expect(headers[.contentType]?.hasPrefix("application/json") == true, "content type", sourceLocation: sourceLocation)
        let value = try JSONValue.decode(Data(body.readableBytesView))
        return try #require(value.objectValue, sourceLocation: sourceLocation)
    }
}
