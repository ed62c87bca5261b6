import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import NIOTLS

/// A faithful, scriptable stand-in for Firebase Cloud Messaging's HTTP v1 API and the Google OAuth token endpoint its
/// senders use, on one TLS server on 127.0.0.1 (HTTP/2 by ALPN `h2`, HTTP/1.1 otherwise).
///
/// - `POST /token` exchanges a service-account assertion (an RS256 JWT) for an access token, verifying it as Google
///   does (signature, `iss`, `aud`, times, scope; the table is in `FCMTokenEndpoint.swift`).
/// - `POST /v1/projects/<project>/messages:send` checks the access token, the project and the message as FCM does
///   (`FCMMessageValidation.swift`), then the registration token's mark and the queued faults, and answers
///   `{"name": "projects/<project>/messages/<id>"}` or Google's error body.
///
/// ```swift
/// let double = try await FCMDouble.start(clock: clock)
/// let serviceAccountPath = try double.writeServiceAccount()   // token_uri points at the double
/// // point the gateway at double.baseURL with that file, trusting double.caPath
/// double.markUnregistered(token)                    // 404 NOT_FOUND, errorCode UNREGISTERED
/// double.failNext(2, .unavailable, retryAfter: 10)  // 503 UNAVAILABLE with retry-after: 10
/// // … send …
/// #expect(double.acceptedMessages.count == 1)
/// try await double.shutdown()
/// ```
///
/// Time (assertion `iat`/`exp`, access-token expiry) comes from the injected clock; TLS validity uses the real time.
/// Connections announce SETTINGS MAX_CONCURRENT_STREAMS = 100, as Google's front end does.
public final class FCMDouble: Sendable {
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The Firebase project whose send endpoint the double serves.
    public let projectID: String
    /// The service account whose assertions the token endpoint accepts.
    public let serviceAccount: FCMTestServiceAccount
    /// The certificates the server presents.
    public let certificates: TestCertificates
    /// A PEM file with the CA that signed the server certificate, for the gateway's trusted-CA option.
    public let caPath: String
    /// The clock used for assertion times and access-token expiry.
    public let clock: any WallClock

    let core: FCMDoubleCore
    private let serverChannel: any Channel

    /// `https://127.0.0.1:<port>`: what replaces `https://fcm.googleapis.com` in the send URL.
    public var baseURL: String { "https://127.0.0.1:\(port)" }
    /// `https://127.0.0.1:<port>/token`: what replaces `https://oauth2.googleapis.com/token`.
    public var tokenURI: String { baseURL + "/token" }
    /// `https://127.0.0.1:<port>/v1/projects/<projectID>/messages:send`.
    public var sendURL: String { baseURL + "/v1/projects/\(projectID)/messages:send" }
    /// The service-account JSON file's text, as Google's console gives it, with `token_uri` set to ``tokenURI``.
    public var serviceAccountJSON: String { serviceAccount.json(tokenURI: tokenURI) }

    /// The OAuth scope for sending with FCM.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The OAuth scope for every Google Cloud API, FCM included.
    public static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

    /// The HTTP/2 MAX_CONCURRENT_STREAMS each connection announces.
    public static let maxConcurrentStreams = 100

    /// Starts a double listening on an ephemeral port of 127.0.0.1.
    ///
    /// - Parameters:
    ///   - projectID: The project of the send endpoint; a send for another is `403 PERMISSION_DENIED`.
    ///   - serviceAccount: The account whose assertions are accepted; by default a new one for `projectID` (with the
    ///     fixed key ``TestRSAKeys/first``).
    ///   - clock: The time for assertion checks and access-token expiry.
    ///   - accessTokenLifetime: The `expires_in` of the access tokens issued (seconds).
    ///   - certificates: The TLS certificates; by default the process's shared CA and leaf
    ///     (``TestCertificates/shared``).
    public static func start(
        projectID: String = "herald-test",
        serviceAccount: FCMTestServiceAccount? = nil,
        clock: any WallClock = SystemClock(),
        accessTokenLifetime: TimeInterval = 3_600,
        certificates: TestCertificates? = nil
    ) async throws -> FCMDouble {
        let serviceAccount = serviceAccount ?? FCMTestServiceAccount(projectID: projectID)
        let certificates = certificates ?? TestCertificates.shared
        let caPath = try certificates.writeCA()
        let sslContext = try NIOSSLContext(
            configuration: certificates.serverTLSConfiguration(applicationProtocols: ["h2", "http/1.1"]))
        let core = FCMDoubleCore(
            projectID: projectID, serviceAccount: serviceAccount, clock: clock, accessTokenLifetime: accessTokenLifetime)
        let (serverChannel, port) = try await DoubleServer.listen(
            sslContext: sslContext,
            connectionOpened: { core.connectionOpened($0) },
            connectionClosed: { core.connectionClosed($0) },
            configure: { channel, result, connectionID in
                Self.configureConnection(channel, negotiated: result, connectionID: connectionID, core: core)
            })
        let double = FCMDouble(
            port: port, projectID: projectID, serviceAccount: serviceAccount, certificates: certificates, caPath: caPath,
            clock: clock, core: core, serverChannel: serverChannel)
        core.setTokenURI(double.tokenURI)
        return double
    }

    private init(
        port: Int, projectID: String, serviceAccount: FCMTestServiceAccount, certificates: TestCertificates,
        caPath: String, clock: any WallClock, core: FCMDoubleCore, serverChannel: any Channel
    ) {
        self.port = port
        self.projectID = projectID
        self.serviceAccount = serviceAccount
        self.certificates = certificates
        self.caPath = caPath
        self.clock = clock
        self.core = core
        self.serverChannel = serverChannel
    }

    /// Writes ``serviceAccountJSON`` to a new file in a new temporary directory and returns its path.
    public func writeServiceAccount() throws -> String {
        try TestKeys.writeFile(named: "\(projectID)-\(serviceAccount.privateKeyID.prefix(12)).json", containing: serviceAccountJSON)
    }

    /// Stops listening and closes every connection (stalled requests included).
    public func shutdown() async throws {
        let connections = core.beginShutdown()
        try? await serverChannel.close()
        for connection in connections {
            try? await connection.close()
        }
    }

    // MARK: Activity log

    /// Every message answered `200`, in order (`validate_only` requests excluded).
    public var acceptedMessages: [AcceptedMessage] { core.acceptedMessages }

    /// Every request to the send endpoint (and to any other path but `/token`), answered or not, in order.
    public var requests: [RecordedRequest] { core.requests }

    /// Every request to the token endpoint, granted or refused, in order.
    public var tokenRequests: [TokenRequest] { core.tokenRequests }

    /// Running totals (connections, sends by outcome, tokens), kept across ``resetLog()``.
    public var counters: Counters { core.counters }

    /// Forgets the messages and requests recorded so far (the counters stay).
    public func resetLog() {
        core.resetLog()
    }

    private static func configureConnection(
        _ channel: any Channel, negotiated result: ALPNResult, connectionID: Int, core: FCMDoubleCore
    ) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            guard case .negotiated("h2") = result else {
                try sync.configureHTTPServerPipeline(withErrorHandling: true)
                try sync.addHandler(DoubleHTTP1Handler(core: core, connectionID: connectionID))
                return
            }
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
            _ = try sync.configureHTTP2Pipeline(
                mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
            ) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(DoubleStreamHandler(core: core, connectionID: connectionID))
                }
            }
        }
    }
}
