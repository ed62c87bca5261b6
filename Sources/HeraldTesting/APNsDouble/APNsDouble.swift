import Foundation
import HeraldCore
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS

/// A faithful, scriptable stand-in for one APNs environment: HTTP/2 over TLS on 127.0.0.1, strict validation of
/// every request in Apple's order, real ES256 provider-token verification, an activity log, and fault injection.
///
/// ```swift
/// let key = TestKey()
/// let double = try await APNsDouble.start(keys: [.init(key)], topics: ["com.example.app"])
/// // point the gateway at double.baseURL, trusting double.caPath
/// double.markUnregistered(token)                       // 410 Unregistered for that device
/// double.failNext(2, status: 503, reason: "ServiceUnavailable")
/// // … send …
/// #expect(double.acceptedPushes.count == 1)
/// try await double.shutdown()
/// ```
///
/// Connections start with SETTINGS MAX_CONCURRENT_STREAMS = 1 and are raised to ``Options/maxConcurrentStreams``
/// after the first request carrying a valid provider token, as APNs does. Time (token age, the 20-minute rule,
/// 410 timestamps) comes from the injected clock; TLS validity uses the real time.
public final class APNsDouble: Sendable {
    /// The environment this double plays (`apns-unique-id` is only sent in the sandbox).
    public let environment: PushEnvironment
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The certificates the server presents.
    public let certificates: TestCertificates
    /// A PEM file with the CA that signed the server certificate, for the gateway's trusted-CA option.
    public let caPath: String
    /// The clock used for token ages and timestamps.
    public let clock: any WallClock

    let core: APNsDoubleCore
    private let serverChannel: any Channel

    /// `https://127.0.0.1:<port>` (the certificate is also valid for `localhost`, see ``localhostURL``).
    public var baseURL: String { "https://127.0.0.1:\(port)" }
    /// `https://localhost:<port>`.
    public var localhostURL: String { "https://localhost:\(port)" }

    /// Starts a double listening on an ephemeral port of 127.0.0.1.
    ///
    /// - Parameters:
    ///   - environment: The environment played; keys limited to the other one are refused.
    ///   - keys: The signing keys it accepts (more can be added with ``register(_:)``).
    ///   - topics: The apps' bundle ids it accepts (push-type suffixes such as `.voip` are derived).
    ///   - clock: The time for `iat` checks, the 20-minute rule, rate limits and 410 timestamps.
    ///   - options: How strict to be.
    ///   - certificates: The TLS certificates; by default the process's shared CA and leaf
    ///     (``TestCertificates/shared``). Pass ``TestCertificates/make(validity:)``'s for a CA of this double alone.
    public static func start(
        environment: PushEnvironment = .production,
        keys: [Key] = [],
        topics: Set<String> = [],
        clock: any WallClock = SystemClock(),
        options: Options = Options(),
        certificates: TestCertificates? = nil
    ) async throws -> APNsDouble {
        let certificates = certificates ?? TestCertificates.shared
        let caPath = try certificates.writeCA()
        let sslContext = try NIOSSLContext(configuration: certificates.serverTLSConfiguration(applicationProtocols: ["h2"]))
        let core = APNsDoubleCore(environment: environment, keys: keys, topics: topics, options: options, clock: clock)

        let (serverChannel, port) = try await DoubleServer.listen(
            sslContext: sslContext,
            connectionOpened: { core.connectionOpened($0) },
            connectionClosed: { core.connectionEvent($0, .closed) },
            configure: { channel, result, connectionID in
                Self.configureConnection(channel, negotiated: result, connectionID: connectionID, core: core)
            })
        return APNsDouble(
            environment: environment, port: port, certificates: certificates, caPath: caPath, clock: clock, core: core,
            serverChannel: serverChannel)
    }

    private init(
        environment: PushEnvironment, port: Int, certificates: TestCertificates, caPath: String, clock: any WallClock,
        core: APNsDoubleCore, serverChannel: any Channel
    ) {
        self.environment = environment
        self.port = port
        self.certificates = certificates
        self.caPath = caPath
        self.clock = clock
        self.core = core
        self.serverChannel = serverChannel
    }

    /// Stops listening and closes every connection (stalled streams included).
    public func shutdown() async throws {
        let connections = core.beginShutdown()
        try? await serverChannel.close()
        for connection in connections {
            try? await connection.close()
        }
    }

    // MARK: Registration

    /// Accepts tokens signed by another key.
    public func register(_ key: Key) {
        core.register(key)
    }

    /// Accepts another app's bundle id as topic.
    public func allowTopic(_ topic: String) {
        core.allow(topic: topic)
    }

    // MARK: Activity log

    /// Every request received, accepted or not, in order.
    public var requests: [RecordedRequest] { core.requests }

    /// The requests answered `200`.
    public var acceptedPushes: [RecordedRequest] { core.requests.filter { $0.status == 200 } }

    /// Running totals (requests received, answers written by status), kept in both ``Options/activityLog`` modes.
    public var counters: Counters { core.counters }

    /// Connection events (opened, SETTINGS, GOAWAY, dropped, closed), in order.
    public var connectionEvents: [ConnectionEvent] { core.events }

    /// Forgets the requests and connection events recorded so far.
    public func resetLog() {
        core.resetLog()
    }

    private static func configureConnection(
        _ channel: any Channel, negotiated result: ALPNResult, connectionID: Int, core: APNsDoubleCore
    ) -> EventLoopFuture<Void> {
        guard case .negotiated("h2") = result else {
            if case .negotiated(let other) = result {
                core.connectionEvent(connectionID, .rejectedALPN(other))
            } else {
                core.connectionEvent(connectionID, .rejectedALPN(nil))
            }
            return channel.close()
        }
        return channel.eventLoop.makeCompletedFuture {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1),
                HTTP2Setting(parameter: .headerTableSize, value: 4_096),
                HTTP2Setting(parameter: .initialWindowSize, value: 65_535),
                HTTP2Setting(parameter: .maxFrameSize, value: 16_384),
                HTTP2Setting(parameter: .maxHeaderListSize, value: 8_000),
            ]
            _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
            ) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(
                        DoubleStreamHandler(core: core, connectionID: connectionID))
                }
            }
            core.connectionEvent(connectionID, .settingsSent(maxConcurrentStreams: 1))
        }
    }
}
