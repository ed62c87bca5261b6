import AsyncHTTPClient
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A provider double in the bench process that Herald delivers to: the APNs double (``BenchAPNs``) or the FCM double
/// (``BenchFCM``). Scenario 1 runs against either through this.
protocol BenchProvider: Sendable {
    /// "APNs" or "FCM", in figure names and notes.
    var name: String { get }
    /// The platform the devices of a run against this double register with.
    var platform: Platform { get }
    /// The `HERALD_*` options that point Herald at the double (and configure no other provider).
    var heraldEnvironment: [String: String] { get }
    /// Answers `200` (a push service's `201`) the double has written so far.
    var delivered: Int { get }
    /// The status a delivery is answered with: `200`, or `201` for a push service.
    var successStatus: Int { get }
    /// What counts as a duplicate delivery, for the figure's name ("a 2nd APNs 200 for one apns-id").
    var duplicateMeaning: String { get }
    /// Starts recording which of Herald's notifications the double answers `200` for. `store` is the SQLite file of
    /// the Herald instance that delivers to it.
    func startLedger(store: String) -> any DeliveryLedger
}

extension BenchProvider {
    var successStatus: Int { 200 }
}

/// Which of Herald's notifications (by the id Herald answered with) a provider double answered `200` for, from the
/// moment the ledger was started.
protocol DeliveryLedger: Sendable {
    /// How many of `ids` have no `200` yet.
    func missing(from ids: Set<String>) throws -> Int
    /// Stops recording: the notifications answered `200` at least once, and the `200`s written in all.
    func stop() throws -> (delivered: Set<String>, answers: Int)
}

/// The client of the doubles' own limits: bare AsyncHTTPClients (no Herald code) over HTTP/2 (by ALPN) and TLS,
/// trusting the double's CA, in a closed loop with a fixed number of requests in flight.
enum DoubleBaseline {
    /// Runs `body` with `count` clients, each with a connection pool of its own; shuts them down afterwards.
    static func withClients<Result>(
        _ count: Int, trusting caPath: String, _ body: ([HTTPClient]) async throws -> Result
    ) async throws -> Result {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(caPath))]
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10)),
            connectionPool: .init(idleTimeout: .seconds(600)), decompression: .disabled)
        configuration.httpVersion = .automatic
        let clients = (0..<count).map { _ in
            HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        }
        do {
            let result = try await body(clients)
            for client in clients { try? await client.shutdown() }
            return result
        } catch {
            for client in clients { try? await client.shutdown() }
            throw error
        }
    }

    /// `inFlight` requests at a time, spread over `clients` in turn; a request succeeds when it is answered `200`.
    static func run(
        _ clients: [HTTPClient], double name: String, inFlight: Int, warmup: Duration, duration: Duration,
        observers: [any WindowObserver], request: @escaping @Sendable (Int) -> HTTPClientRequest
    ) async -> ClosedLoopResult {
        await ClosedLoop.run(
            concurrency: inFlight, warmup: warmup, duration: duration, label: "\(name) double baseline",
            observers: observers
        ) { index in
            do {
                let response = try await clients[index % clients.count].execute(request(index), timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 65_536)
                guard (200..<300).contains(response.status.code) else {  // push services answer 201
                    return .failure(
                        BenchFailure(description: "\(name) double answered \(response.status.code) \(String(buffer: body))"))
                }
                return .success(())
            } catch {
                return .failure(BenchFailure(description: "\(error)"))
            }
        }
    }
}
