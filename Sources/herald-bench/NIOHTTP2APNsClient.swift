import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A minimal APNs client built directly on swift-nio-http2's stream multiplexer, for the benchmark's client comparison
/// (scenario b2, issue 10 step 5) only: TCP (`ClientBootstrap`), TLS (`NIOSSLClientHandler`, ALPN `h2` only, the
/// double's CA trusted), `NIOHTTP2Handler` in client mode, and one child stream channel per request that writes
/// `HTTP2Frame.FramePayload`s itself: HEADERS, then DATA with END_STREAM; it reads the answer's `:status` and body.
/// No HTTP/1 types and no conversion between them and HTTP/2 frames, which AsyncHTTPClient does on every request.
///
/// A fixed set of connections, opened before use and chosen by the caller (`index % connections`, in turn).
/// Concurrent streams: the server's SETTINGS_MAX_CONCURRENT_STREAMS is respected by `NIOHTTP2Handler` itself, which
/// holds back the HEADERS of a stream the server does not allow yet until it allows more (the APNs double starts each
/// connection at 1 and raises it to 1,000 after the first valid request); the benchmark keeps 256 requests in flight
/// over all connections, as Herald's delivery slots do. Each request has a deadline, after which its stream is reset.
///
/// What it does not do (what Herald's provider would need before using such a client): react to GOAWAY (requests on
/// a connection the server is closing fail), replace a closed or failed connection, reconnect, retry, notice a
/// connection that stopped answering (PING), or limit how many requests wait for a stream.
final class NIOHTTP2APNsClient: Sendable {
    /// An answer: its `:status` and its body (empty for APNs's `200`).
    struct Response: Sendable {
        var status: Int
        var body: ByteBuffer
    }

    /// Why a request or a connection failed.
    enum Failure: Error, CustomStringConvertible {
        case alpn(String?)
        case connectionClosed
        case streamClosedBeforeAnswer
        case answerWithoutStatus
        case deadline(TimeAmount)

        var description: String {
            switch self {
            case .alpn(let protocolName): "ALPN negotiated \(protocolName ?? "nothing"), not h2"
            case .connectionClosed: "the connection closed before TLS was done"
            case .streamClosedBeforeAnswer: "the stream closed (or was reset) before the whole answer came"
            case .answerWithoutStatus: "an answer without :status"
            case .deadline(let timeout): "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
            }
        }
    }

    private struct Connection: Sendable {
        let channel: any Channel
        let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    }

    private let connections: [Connection]
    private let timeout: TimeAmount
    /// `host:port`, the `:authority` of every request.
    let authority: String

    private init(connections: [Connection], timeout: TimeAmount, authority: String) {
        self.connections = connections
        self.timeout = timeout
        self.authority = authority
    }

    /// Opens `count` connections to `host:port` (TLS trusting the CA in the PEM file `caPath`, the certificate checked
    /// against the IP address, as for AsyncHTTPClient), each ready once TLS negotiated `h2`.
    static func connect(
        host: String, port: Int, caPath: String, connections count: Int, timeout: TimeAmount = .seconds(30)
    ) async throws -> NIOHTTP2APNsClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(caPath))]
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        var connections: [Connection] = []
        do {
            for _ in 0..<count {
                let (channel, multiplexer, negotiated) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.seconds(10))
                    .connect(host: host, port: port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            let negotiated = channel.eventLoop.makePromise(of: Void.self)
                            // An IP address is not sent as SNI; NIOSSL then checks the certificate against the peer's
                            // address.
                            try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: nil))
                            try sync.addHandler(ALPNCheck(negotiated: negotiated))
                            let multiplexer = try sync.configureHTTP2Pipeline(
                                mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                            ) { pushed in pushed.close() }  // APNs pushes nothing
                            return (channel, multiplexer, negotiated.futureResult)
                        }
                    }
                connections.append(Connection(channel: channel, multiplexer: multiplexer))
                try await negotiated.get()
            }
        } catch {
            for connection in connections { try? await connection.channel.close() }
            throw error
        }
        return NIOHTTP2APNsClient(connections: connections, timeout: timeout, authority: "\(host):\(port)")
    }

    /// Sends one request on a new stream of connection `index % connections` and waits for the whole answer.
    /// `headers` are the request's, pseudo-headers first; `body` goes in one DATA frame that ends the stream.
    func send(on index: Int, headers: HPACKHeaders, body: ByteBuffer) async throws -> Response {
        let connection = connections[index % connections.count]
        let answer = connection.channel.eventLoop.makePromise(of: Response.self)
        let timeout = self.timeout
        connection.multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(
                    APNsStreamHandler(headers: headers, body: body, timeout: timeout, answer: answer))
            }
        }.whenFailure { answer.fail($0) }  // a promise completed twice keeps its first result
        return try await answer.futureResult.get()
    }

    /// Closes every connection (streams still open fail).
    func shutdown() async {
        for connection in connections { try? await connection.channel.close() }
    }
}

/// Fails `negotiated` unless TLS ended with ALPN `h2` (the connection is then closed); passes everything on.
private final class ALPNCheck: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let negotiated: EventLoopPromise<Void>

    init(negotiated: EventLoopPromise<Void>) { self.negotiated = negotiated }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let protocolName) = event {
            if protocolName == "h2" {
                negotiated.succeed()
            } else {
                negotiated.fail(NIOHTTP2APNsClient.Failure.alpn(protocolName))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        negotiated.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        negotiated.fail(NIOHTTP2APNsClient.Failure.connectionClosed)
        context.fireChannelInactive()
    }
}

/// One request on its own stream: writes HEADERS and DATA (END_STREAM) when the stream becomes active, collects the
/// answer's HEADERS (`:status`) and DATA until END_STREAM, and completes `answer`. The stream closes by itself once
/// both sides ended it; a reset, a closed connection or the deadline fail `answer`.
private final class APNsStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let headers: HPACKHeaders
    private let body: ByteBuffer
    private let timeout: TimeAmount
    private let answer: EventLoopPromise<NIOHTTP2APNsClient.Response>
    private var status: Int?
    private var responseBody: ByteBuffer?
    private var deadline: Scheduled<Void>?
    private var isDone = false

    init(
        headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount,
        answer: EventLoopPromise<NIOHTTP2APNsClient.Response>
    ) {
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.fail(.deadline(self.timeout), context: context)
        }
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if status == nil, let value = frame.headers.first(name: ":status") { status = Int(value) }
            if frame.endStream { finish(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data {
                if responseBody == nil { responseBody = buffer } else { responseBody!.writeBuffer(&buffer) }
            }
            if frame.endStream { finish(context: context) }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.streamClosedBeforeAnswer, context: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isDone else { return }
        isDone = true
        cancelDeadline()
        answer.fail(error)
        context.close(promise: nil)
    }

    private func finish(context: ChannelHandlerContext) {
        guard !isDone else { return }
        guard let status else {
            fail(.answerWithoutStatus, context: context)
            return
        }
        isDone = true
        cancelDeadline()
        answer.succeed(.init(status: status, body: responseBody ?? ByteBuffer()))
    }

    /// Cancels the deadline and lets go of it (it refers to this handler).
    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    /// Fails the answer once; with a context, also resets the stream (closing a stream channel that is still open).
    private func fail(_ failure: NIOHTTP2APNsClient.Failure, context: ChannelHandlerContext?) {
        guard !isDone else { return }
        isDone = true
        cancelDeadline()
        answer.fail(failure)
        context?.close(promise: nil)
    }
}
