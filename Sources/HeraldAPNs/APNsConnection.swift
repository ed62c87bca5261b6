// Hand-written on purpose: Herald's own HTTP/2 client for APNs (this file, APNsConnectionHandler.swift,
// APNsConnectionPool.swift) instead of AsyncHTTPClient, the library Herald uses for FCM.
//
// Measured reason ("APNs client: AsyncHTTPClient against a bare swift-nio-http2 client (issue 10, step 5)" and "The
// switch" in docs/performance-history.md, docs/performance.md before issue 28; scenario b2, `herald-bench
// --scenarios b2`): this client costs 0.56–0.67× the CPU per push of AsyncHTTPClient on the same load (0.175–0.290
// ms against 0.264–0.522 ms, three runs), and Herald end to end spent about 8 % less CPU per delivered notification
// after the switch (8.67–8.94× the bare request against 9.44–9.84×, scenario 1, runs in turn), with a shorter tail
// at saturation (p99 46–50 ms against 63–64 ms). It also codes `authorization`, `apns-id`, `apns-expiration` and
// `apns-collapse-id` as HPACK literals without indexing, as Apple asks; AsyncHTTPClient indexes every header.
//
// What would let Herald go back: an AsyncHTTPClient whose HTTP/2 path sends a request without converting it to
// HTTP/1 types and without a child channel per stream, and that lets a request mark a header as never indexed. Rerun
// scenario b2 then: once AsyncHTTPClient's CPU per push is within the machine's spread of this client's, drop these
// three files and send through `HTTPClient` as FCMProvider does.

import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One HTTP/2 connection to an APNs endpoint, built directly on swift-nio-http2: TCP, TLS with ALPN `h2`,
/// `NIOHTTP2Handler` in client mode without a stream multiplexer, and ``APNsConnectionHandler``, which writes each
/// request's HEADERS and DATA frames on a stream id of its own and matches the answers' frames by stream id. Issue 10
/// measured a client on the stream multiplexer against AsyncHTTPClient, which converts every request to HTTP/1 types
/// and back: 0.56–0.72× the CPU per push (docs/performance.md, scenario b2); this one also does without a channel per
/// stream and writes the requests that arrive together in one flush ("Frames without stream channels").
///
/// - **Ready** means TLS negotiated `h2` and the server's first SETTINGS frame arrived, so the first streams already
///   respect its `SETTINGS_MAX_CONCURRENT_STREAMS` (APNs starts at 1). Streams beyond the server's limit wait inside
///   `NIOHTTP2Handler` until the server allows more.
/// - **Usable** until the server sends GOAWAY, the connection closes, it is retired (``retire()``) or it has opened a
///   billion streams (client stream ids end at 2³¹); the pool then opens a fresh one. A retired connection finishes
///   the requests it carries and closes when the last one ends.
/// - **Deadlines**: each request has one, covering the wait for a stream and the answer; past it the stream is reset.
public final class APNsConnection: Sendable {
    /// Why a connection could not be made or a request was not answered on it.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// TLS ended without ALPN `h2`.
        case notHTTP2(negotiated: String?)
        /// The connection closed before it was ready.
        case closedBeforeReady
        /// TCP, TLS and the server's SETTINGS took longer than this.
        case notReadyWithin(TimeAmount)
        /// The connection is going away (GOAWAY received, or closed) or used up; nothing was sent.
        case notAcceptingStreams
        /// The stream closed or was reset before the whole answer came.
        case streamClosedBeforeAnswer
        /// An answer without `:status`.
        case answerWithoutStatus
        /// An answer body larger than ``APNsConnection/maximumAnswerBody``.
        case answerTooLarge
        /// No complete answer within the request's deadline.
        case noAnswerWithin(TimeAmount)

        public var description: String {
            switch self {
            case .notHTTP2(let negotiated): "TLS negotiated \(negotiated ?? "no protocol"), not h2"
            case .closedBeforeReady: "the connection closed before TLS and HTTP/2 were set up"
            case .notReadyWithin(let timeout): "no HTTP/2 connection within \(timeout.seconds) s"
            case .notAcceptingStreams: "the connection is going away"
            case .streamClosedBeforeAnswer: "the stream closed before the answer"
            case .answerWithoutStatus: "an answer without :status"
            case .answerTooLarge: "an answer body over \(APNsConnection.maximumAnswerBody) bytes"
            case .noAnswerWithin(let timeout): "no answer within \(timeout.seconds) s"
            }
        }
    }

    /// A complete answer.
    public struct Answer: Sendable {
        /// The `:status`.
        public var status: Int
        /// The `apns-id` header of the answer.
        public var apnsID: String?
        /// The body (empty for `200`).
        public var body: ByteBuffer
    }

    /// Where a connection goes: the base URL's host (without brackets) and port, and the `:authority` it sends.
    public struct Endpoint: Sendable, Hashable {
        /// The host name or address (without brackets).
        public let host: String
        /// The TCP port.
        public let port: Int
        /// `host[:port]` as in the URL, sent as `:authority`.
        public let authority: String

        /// From a normalized base URL (``HTTPSBaseURL``), e.g. `https://api.push.apple.com` or `https://127.0.0.1:8443`.
        public init?(baseURL: String) {
            guard let url = URL(string: baseURL), let host = url.host, !host.isEmpty else { return nil }
            self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            self.port = url.port ?? 443
            self.authority = String(baseURL.dropFirst("https://".count))
        }

        /// An IP address is not sent as SNI; the certificate is then checked against the address.
        var isIPAddress: Bool { (try? SocketAddress(ipAddress: host, port: port)) != nil }
    }

    /// The largest answer body read (APNs's error bodies are under 100 bytes).
    public static let maximumAnswerBody = 64 * 1024
    /// Streams a connection opens before it is replaced: client stream ids are odd and end at 2³¹ − 1.
    public static let defaultStreamBudget = 1_000_000_000

    private struct State {
        var isGoingAway = false
        var isRetired = false
        var inFlight = 0
        var streamsOpened = 0
    }

    /// The TCP channel; it closes when the connection does.
    public let channel: any Channel
    private let requests: APNsRequestQueue
    /// Writes the queued requests; used on the channel's event loop only.
    private let handler: NIOLoopBound<APNsConnectionHandler>
    private let authority: String
    /// Streams this connection opens before it takes no more (``defaultStreamBudget``; smaller in tests).
    private let streamBudget: Int
    private let state = Mutex(State())

    private init(
        channel: any Channel, requests: APNsRequestQueue, handler: APNsConnectionHandler, authority: String, streamBudget: Int
    ) {
        self.channel = channel
        self.requests = requests
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        self.authority = authority
        self.streamBudget = streamBudget
    }

    /// Opens a connection; the future succeeds once it is ready (see the type's documentation) or fails with the
    /// connect, TLS or ``Failure`` error, closing what was opened.
    public static func connect(
        to endpoint: Endpoint, tls: NIOSSLContext, group: any EventLoopGroup, readyWithin timeout: TimeAmount,
        streamBudget: Int = defaultStreamBudget
    ) -> EventLoopFuture<APNsConnection> {
        let eventLoop = group.next()
        let ready = eventLoop.makePromise(of: APNsConnection.self)
        let serverHostname = endpoint.isIPAddress ? nil : endpoint.host
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .deadPeerDetection()
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                    // No stream multiplexer: every frame reaches the connection handler below.
                    try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: .init()))
                    let requests = APNsRequestQueue()
                    let handler = APNsConnectionHandler(queue: requests, ready: ready)
                    handler.connection = APNsConnection(
                        channel: channel, requests: requests, handler: handler, authority: endpoint.authority,
                        streamBudget: streamBudget)
                    try sync.addHandler(handler)
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .whenComplete { result in
                switch result {
                case .failure(let error):
                    ready.fail(error)
                case .success(let channel):
                    let deadline = channel.eventLoop.scheduleTask(in: timeout) {
                        ready.fail(Failure.notReadyWithin(timeout))
                        channel.close(promise: nil)
                    }
                    ready.futureResult.whenComplete { _ in deadline.cancel() }
                }
            }
        return ready.futureResult
    }

    /// Whether new requests may go out on this connection.
    public var isUsable: Bool {
        state.withLock { !$0.isGoingAway && !$0.isRetired && $0.streamsOpened < streamBudget }
    }

    /// Requests sent on this connection and not yet answered or failed.
    public var requestsInFlight: Int { state.withLock { $0.inFlight } }

    /// Sends `POST path` with `headers` (pseudo-headers are added here) and `body` in one DATA frame, and waits for
    /// the whole answer or the deadline.
    public func post(path: String, headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount) async throws -> Answer {
        guard beginStream() else { throw Failure.notAcceptingStreams }
        defer { endStream() }
        var requestHeaders = HPACKHeaders()
        requestHeaders.reserveCapacity(headers.count + 5)
        requestHeaders.add(name: ":method", value: "POST")
        requestHeaders.add(name: ":scheme", value: "https")
        requestHeaders.add(name: ":authority", value: authority)
        // Apple: `:path` and `authorization` as literals without indexing; APNs keeps a small dynamic table.
        requestHeaders.add(name: ":path", value: path, indexing: .nonIndexable)
        requestHeaders.add(contentsOf: headers)
        requestHeaders.add(name: "content-length", value: String(body.readableBytes))

        let answer = channel.eventLoop.makePromise(of: Answer.self)
        let request = APNsRequestQueue.Request(headers: requestHeaders, body: body, timeout: timeout, answer: answer)
        if requests.enqueue(request) {
            let handler = handler
            channel.eventLoop.execute { handler.value.drain() }
        }
        return try await answer.futureResult.get()
    }

    /// Stops new requests on this connection; it closes once those in flight have ended.
    ///
    /// - Returns: whether this call retired it (`false` if it already was).
    @discardableResult
    public func retire() -> Bool {
        let (wasRetired, closeNow) = state.withLock { state in
            defer { state.isRetired = true }
            return (state.isRetired, state.inFlight == 0)
        }
        if closeNow { channel.close(promise: nil) }
        return !wasRetired
    }

    /// Closes the connection at once; open streams fail.
    public func close() async {
        try? await channel.close()
    }

    /// Called by the handler on GOAWAY or when the channel closes.
    func markGoingAway() {
        state.withLock { $0.isGoingAway = true }
    }

    private func beginStream() -> Bool {
        state.withLock { state in
            guard !state.isGoingAway, state.streamsOpened < streamBudget else { return false }
            state.inFlight += 1
            state.streamsOpened += 1
            return true
        }
    }

    private func endStream() {
        let closeNow = state.withLock { state in
            state.inFlight -= 1
            return state.inFlight == 0 && (state.isRetired || state.streamsOpened >= streamBudget)
        }
        if closeNow { channel.close(promise: nil) }
    }
}

extension ClientBootstrap {
    /// Lets the kernel close a connection whose peer went away without a word (a NAT or firewall dropped it, the host
    /// died), which HTTP/2 alone would not notice until the next request timed out (Herald sends no PINGs): TCP
    /// keep-alive probes after 60 s idle (every 10 s, 3 unanswered close it), and `TCP_USER_TIMEOUT`, which closes it
    /// when data sent stays unacknowledged for 30 s. The requests on it then fail as a lost connection and are sent
    /// again on a fresh one. Linux only; elsewhere the system's defaults apply.
    fileprivate func deadPeerDetection() -> ClientBootstrap {
        #if os(Linux)
            let tcp = { (option: CInt) in ChannelOptions.tcpOption(NIOBSDSocket.Option(rawValue: option)) }
            return self.channelOption(.socketOption(.so_keepalive), value: 1)
                .channelOption(tcp(CInt(TCP_KEEPIDLE)), value: 60)
                .channelOption(tcp(CInt(TCP_KEEPINTVL)), value: 10)
                .channelOption(tcp(CInt(TCP_KEEPCNT)), value: 3)
                .channelOption(tcp(CInt(TCP_USER_TIMEOUT)), value: 30_000)
        #else
            return self
        #endif
    }
}

extension TimeAmount {
    /// Whole seconds, for messages.
    fileprivate var seconds: Int64 { nanoseconds / 1_000_000_000 }
}
