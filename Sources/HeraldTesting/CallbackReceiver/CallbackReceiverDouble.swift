import Crypto
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// A callback receiver as senders run them (Standard Webhooks), on one TLS server on 127.0.0.1 (HTTP/1.1), for
/// Herald's callbacks to reach. For each request it checks what a receiver checks, with its own HMAC (not Herald's):
/// `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under
/// the secret it was given (`whsec_…`); it records the request and answers 204, or what a fault says.
///
/// ```swift
/// let receiver = try await CallbackReceiverDouble.start()
/// receiver.secret = "whsec_…"                          // herald token secret
/// receiver.failNext(2, .init(status: 500))
/// // … send …
/// #expect(receiver.received.last?.signatureValid == true)
/// try await receiver.shutdown()
/// ```
public final class CallbackReceiverDouble: Sendable {
    /// A request the receiver took.
    public struct Received: Sendable {
        public var path: String
        /// Headers by lowercase name.
        public var headers: [String: String]
        public var body: Data
        /// The body as a JSON object (empty when it is not one).
        public var json: JSONObject
        /// Whether the signature matched the secret.
        public var signatureValid: Bool
        /// The status answered.
        public var status: Int
    }

    /// An answer for the next request(s), after an optional delay; `stall`: no answer at all (until the receiver shuts
    /// down).
    public struct Fault: Sendable, Equatable {
        public var status: Int
        public var retryAfter: Int?
        public var delay: Duration?
        public var stall: Bool

        public init(status: Int, retryAfter: Int? = nil, delay: Duration? = nil, stall: Bool = false) {
            self.status = status
            self.retryAfter = retryAfter
            self.delay = delay
            self.stall = stall
        }

        /// A receiver that takes requests and never answers.
        public static let stalled = Fault(status: 0, stall: true)
    }

    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// A PEM file with the CA that signed the server certificate (for `HERALD_CALLBACK_CA_PATH`).
    public let caPath: String
    let core: CallbackReceiverCore
    private let serverChannel: any Channel

    /// Starts a receiver on an ephemeral port of 127.0.0.1 (certificate for `localhost` and `127.0.0.1`).
    public static func start(certificates: TestCertificates? = nil) async throws -> CallbackReceiverDouble {
        let certificates = certificates ?? TestCertificates.shared
        let caPath = try certificates.writeCA()
        let sslContext = try NIOSSLContext(configuration: certificates.serverTLSConfiguration(applicationProtocols: ["http/1.1"]))
        let core = CallbackReceiverCore()
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
        return CallbackReceiverDouble(port: port, caPath: caPath, core: core, serverChannel: serverChannel)
    }

    private init(port: Int, caPath: String, core: CallbackReceiverCore, serverChannel: any Channel) {
        self.port = port
        self.caPath = caPath
        self.core = core
        self.serverChannel = serverChannel
    }

    /// `https://127.0.0.1:<port><path>` (or another host name for the same server, e.g. `localhost`).
    public func url(_ path: String = "/hook", host: String = "127.0.0.1") -> String { "https://\(host):\(port)\(path)" }

    /// The `whsec_…` secret signatures are checked against.
    public var secret: String? {
        get { core.state.withLock { $0.secret } }
        set { core.state.withLock { $0.secret = newValue } }
    }

    /// The next `count` requests (to any path) are answered with `fault` instead of 204.
    public func failNext(_ count: Int = 1, _ fault: Fault) { core.state.withLock { $0.faults.append(fault, count: count) } }

    /// Every request to `path` is answered with `fault` (a slow or broken receiver), until cleared with `nil`.
    public func answer(_ path: String, with fault: Fault?) { core.state.withLock { $0.pathFaults[path] = fault } }

    /// Every request taken, in order.
    public var received: [Received] { core.state.withLock { $0.received } }
    /// Requests taken and not answered yet (those a delay holds).
    public var inFlight: Int { core.state.withLock { $0.inFlight } }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        let connections = core.beginShutdown()
        try? await serverChannel.close()
        for connection in connections { try? await connection.close() }
    }
}

/// The receiver's state and decisions, under one lock.
final class CallbackReceiverCore: DoubleRequestHandling {
    struct State {
        var secret: String?
        var faults = FaultQueue<CallbackReceiverDouble.Fault>()
        var pathFaults: [String: CallbackReceiverDouble.Fault] = [:]
        var received: [CallbackReceiverDouble.Received] = []
        var connections: [Int: any Channel] = [:]
        var nextConnectionID = 1
        var inFlight = 0
        var isShutDown = false
    }

    let state = Mutex(State())

    func connectionOpened(_ channel: any Channel) -> Int? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            defer { state.nextConnectionID += 1 }
            state.connections[state.nextConnectionID] = channel
            return state.nextConnectionID
        }
    }

    func connectionClosed(_ id: Int) { _ = state.withLock { $0.connections.removeValue(forKey: id) } }

    func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShutDown = true
            return Array(state.connections.values)
        }
    }

    func handle(_ request: DoubleRequest) -> DoubleAction {
        let path = request.header(":path") ?? "/"
        var headers: [String: String] = [:]
        for header in request.headers where !header.name.hasPrefix(":") { headers[header.name] = header.value }
        return state.withLock { state in
            let valid = Self.verify(headers: headers, body: request.body, secret: state.secret)
            let fault = state.pathFaults[path] ?? state.faults.next()
            let status = fault?.status ?? 204
            state.received.append(
                .init(
                    path: path, headers: headers, body: request.body, json: (try? JSONValue.decode(request.body).objectValue) ?? [:],
                    signatureValid: valid, status: status))
            var responseHeaders = [(":status", String(status))]
            if let retryAfter = fault?.retryAfter { responseHeaders.append(("retry-after", String(retryAfter))) }
            state.inFlight += 1
            if fault?.stall == true { return .stall(raiseStreamsTo: nil) }
            return .respond(DoubleResponse(headers: responseHeaders, body: nil), raiseStreamsTo: nil, delay: fault?.delay)
        }
    }

    func answerWritten(_ response: DoubleResponse) {
        state.withLock { state in if state.inFlight > 0 { state.inFlight -= 1 } }
    }

    /// Standard Webhooks' check: every `v1,` signature in the header against HMAC-SHA256(secret, "id.timestamp.body").
    static func verify(headers: [String: String], body: Data, secret: String?) -> Bool {
        guard let secret, secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))),
            let id = headers["webhook-id"], let timestamp = headers["webhook-timestamp"], Int64(timestamp) != nil,
            let signatures = headers["webhook-signature"]
        else { return false }
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(body)
        let expected = "v1," + Data(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))).base64EncodedString()
        return signatures.split(separator: " ").contains { $0 == expected }
    }
}
