import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOTLS

/// A push service as browsers' vendors run them (RFC 8030, 8291, 8292), on one TLS server on 127.0.0.1 (HTTP/1.1),
/// for Herald's Web Push provider to send to.
///
/// It makes subscriptions (an endpoint URL and the browser's keys, whose private half it keeps) and, for each `POST` to
/// an endpoint, checks what a push service checks: the VAPID `Authorization` (an ES256 JWT signed by the `k` key, `aud`
/// = this service's origin, `exp` in the future and at most 24 hours ahead, `sub` present), `Content-Encoding:
/// aes128gcm` and `TTL`; then decrypts the body with the subscription's private key (``WebPushDecryption``) and
/// records it. Answers `201 Created` with a `Location`, or what a fault says.
///
/// ```swift
/// let double = try await WebPushDouble.start()
/// let subscription = double.makeSubscription()            // subscription.json is what a browser registers
/// double.markGone(subscription, status: 410)               // the subscription expired
/// double.failNext(1, status: 429, retryAfter: 30)
/// // … send …
/// #expect(double.received.first?.json["title"] == "Hello")
/// try await double.shutdown()
/// ```
public final class WebPushDouble: Sendable {
    /// A subscription the double made: what the browser registers with Herald, and its private key.
    public struct Subscription: Sendable {
        /// `https://<host>:<port>/push/<id>`.
        public let endpoint: String
        /// The browser's side (private key and auth secret).
        public let subscriber: WebPushDecryption.Subscriber
        /// The id in the endpoint's path.
        public let id: String

        /// `{"endpoint": …, "keys": {"p256dh": …, "auth": …}}`, as `PushSubscription.toJSON()` gives it.
        public var json: JSONObject {
            ["endpoint": .string(endpoint), "keys": ["p256dh": .string(subscriber.p256dh), "auth": .string(subscriber.authText)]]
        }
    }

    /// A message the double took (answered 2xx) or refused after decoding.
    public struct ReceivedMessage: Sendable {
        /// The subscription's id.
        public var subscriptionID: String
        /// The request's headers (lowercase names).
        public var headers: [String: String]
        /// The decrypted plaintext.
        public var plaintext: Data
        /// The plaintext as a JSON object (empty when it is not one).
        public var json: JSONObject
        /// The VAPID JWT's claims.
        public var claims: JSONObject
        /// The status answered.
        public var status: Int
    }

    /// A request the double refused before decrypting it, and why.
    public struct RefusedRequest: Sendable {
        public var path: String
        public var status: Int
        public var reason: String
    }

    /// One request as the double saw it, answered or not.
    public struct RecordedRequest: Sendable, Equatable {
        /// Which connection carried it (numbered from 1).
        public var connectionID: Int
        /// The `Authorization` header, if any.
        public var authorization: String?
        /// The status answered; `nil` when the double dropped the connection instead.
        public var status: Int?
    }

    /// A fault for the next request(s): the status to answer (after the checks pass), with `Retry-After`, after a delay.
    public struct Fault: Sendable, Equatable {
        public var status: Int
        public var retryAfter: Int?
        public var body: String
        public var delay: Duration?

        public init(status: Int, retryAfter: Int? = nil, body: String = "", delay: Duration? = nil) {
            self.status = status
            self.retryAfter = retryAfter
            self.body = body
            self.delay = delay
        }
    }

    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// A PEM file with the CA that signed the server certificate (for `HERALD_WEBPUSH_CA_PATH`).
    public let caPath: String
    let core: WebPushDoubleCore
    private let serverChannel: any Channel

    /// Starts a double on an ephemeral port of 127.0.0.1 (certificate for `localhost` and `127.0.0.1`).
    public static func start(clock: any WallClock = SystemClock(), certificates: TestCertificates? = nil) async throws -> WebPushDouble {
        let certificates = certificates ?? TestCertificates.shared
        let caPath = try certificates.writeCA()
        let sslContext = try NIOSSLContext(configuration: certificates.serverTLSConfiguration(applicationProtocols: ["http/1.1"]))
        let core = WebPushDoubleCore(clock: clock)
        let (serverChannel, port) = try await DoubleServer.listen(
            sslContext: sslContext,
            connectionOpened: { core.connectionOpened($0) },
            connectionClosed: { core.connectionClosed($0) },
            configure: { channel, _, connectionID in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(DoubleHTTP1Handler(core: core, connectionID: connectionID))
                }
            })
        return WebPushDouble(port: port, caPath: caPath, core: core, serverChannel: serverChannel)
    }

    private init(port: Int, caPath: String, core: WebPushDoubleCore, serverChannel: any Channel) {
        self.port = port
        self.caPath = caPath
        self.core = core
        self.serverChannel = serverChannel
    }

    /// A new subscription whose endpoint names `host` (`127.0.0.1`, or `localhost` to go through name resolution).
    public func makeSubscription(host: String = "127.0.0.1") -> Subscription {
        let id = Base64URL.encode(Data((0..<16).map { _ in UInt8.random(in: 0...255) }))
        let subscription = Subscription(endpoint: "https://\(host):\(port)/push/\(id)", subscriber: .init(), id: id)
        core.add(subscription)
        return subscription
    }

    /// From now on the subscription is gone: its endpoint answers `status` (404 or 410).
    public func markGone(_ subscription: Subscription, status: Int = 410) {
        core.markGone(subscription.id, status: status)
    }

    /// The next `count` requests that pass the checks are answered with `fault` instead of 201.
    public func failNext(_ count: Int = 1, _ fault: Fault) {
        core.inject(fault, count: count)
    }

    /// Forgets every queued fault: the next requests are answered 201 again.
    public func clearFaults() {
        core.clearFaults()
    }

    /// The next `count` requests get no answer: the double closes their connection.
    public func dropNext(_ count: Int = 1) {
        core.dropNext(count)
    }

    /// Every request, in order, answered or dropped.
    public var requests: [RecordedRequest] { core.requests }

    /// Every message decrypted, in order (answered 2xx or with a fault).
    public var received: [ReceivedMessage] { core.received }
    /// The messages answered 201, in order.
    public var delivered: [ReceivedMessage] { core.received.filter { $0.status == 201 } }
    /// How many messages were answered 201 so far (cheap: no copy of the log).
    public var deliveredCount: Int { core.deliveredCount }
    /// Requests refused by the checks (VAPID, headers, unknown endpoint, undecryptable body).
    public var refused: [RefusedRequest] { core.refused }
    /// The most requests the double had in flight at once (answered after a delay).
    public var maximumInFlight: Int { core.maximumInFlight }
    /// Requests taken and not answered yet (those a fault's delay holds).
    public var inFlight: Int { core.inFlight }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        let connections = core.beginShutdown()
        try? await serverChannel.close()
        for connection in connections { try? await connection.close() }
    }
}
