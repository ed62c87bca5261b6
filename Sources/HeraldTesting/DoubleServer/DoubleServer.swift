import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// What the provider doubles (``APNsDouble``, ``FCMDouble``) share: a TLS listener on 127.0.0.1, the request a
/// connection hands over, and what the double's core tells the connection to do with it.
///
/// Each double has a core that holds its state and decides (``DoubleRequestHandling``); the NIO handlers
/// (``DoubleStreamHandler`` for HTTP/2, ``DoubleHTTP1Handler`` for HTTP/1.1) only collect a request, ask the core
/// and do what it says.
enum DoubleServer {
    /// Listens on an ephemeral port of 127.0.0.1. Every accepted connection is numbered by `connectionOpened`
    /// (which returns `nil` to refuse it, e.g. while shutting down), gets TLS with `sslContext`, and once ALPN is
    /// settled is handed to `configure` with the negotiated protocol and its number.
    ///
    /// - Returns: the listening channel and its port.
    static func listen(
        sslContext: NIOSSLContext,
        connectionOpened: @escaping @Sendable (any Channel) -> Int?,
        connectionClosed: @escaping @Sendable (Int) -> Void,
        configure: @escaping @Sendable (any Channel, ALPNResult, Int) -> EventLoopFuture<Void>
    ) async throws -> (channel: any Channel, port: Int) {
        let serverChannel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let connectionID = connectionOpened(channel) else {
                        channel.close(promise: nil)
                        return
                    }
                    channel.closeFuture.whenComplete { _ in connectionClosed(connectionID) }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(
                        ApplicationProtocolNegotiationHandler { result, channel in
                            configure(channel, result, connectionID)
                        })
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = serverChannel.localAddress?.port else {
            try? await serverChannel.close()
            throw DoubleServerError.noPort
        }
        return (serverChannel, port)
    }

    /// Closes the TCP socket under TLS, so the client sees the connection vanish without close_notify or GOAWAY.
    static func dropConnection(_ connection: any Channel) {
        if let tlsContext = try? connection.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
            tlsContext.close(promise: nil)
        } else {
            connection.close(promise: nil)
        }
    }
}

/// Why a double could not start.
public enum DoubleServerError: Error, Sendable {
    /// The listening socket has no port.
    case noPort
}

/// One header field as a double received it.
public struct ReceivedHeader: Sendable, Equatable {
    /// The field name (lowercase in HTTP/2; pseudo-headers start with `:`).
    public var name: String
    /// The field value.
    public var value: String
    /// Whether the client let HPACK add the field to the dynamic table
    /// (Apple asks for `authorization` and `:path` to be sent without indexing). Always `false` over HTTP/1.1.
    public var indexed: Bool

    /// Creates a header field.
    public init(name: String, value: String, indexed: Bool = false) {
        self.name = name
        self.value = value
        self.indexed = indexed
    }
}

/// A complete request (headers and body) from one HTTP/2 stream or one HTTP/1.1 exchange.
///
/// Over HTTP/1.1 the request line and `host` are given as the pseudo-headers `:method`, `:path`, `:scheme` and
/// `:authority`, and the other field names are lowercased, so that a core reads both protocols alike.
struct DoubleRequest: Sendable {
    var connectionID: Int
    /// The HTTP/2 stream id; over HTTP/1.1, the exchange's position on its connection (1, 2, …).
    var streamID: Int
    var headers: [ReceivedHeader]
    var body: Data

    /// The first value of a header field.
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// A response to write: `:status` and the other fields in `headers`, then `body` if any.
struct DoubleResponse: Sendable {
    var headers: [(String, String)]
    var body: Data?

    /// The `:status` field as a number (0 if missing).
    var status: Int {
        headers.first { $0.0 == ":status" }.flatMap { Int($0.1) } ?? 0
    }
}

/// What the connection handler must do with a request.
enum DoubleAction: Sendable {
    /// Write `response`, after `delay` if any; first raise the connection's MAX_CONCURRENT_STREAMS if asked.
    case respond(DoubleResponse, raiseStreamsTo: Int?, delay: Duration?)
    /// Never answer (the stream stays open).
    case stall(raiseStreamsTo: Int?)
    /// Close the TCP connection at once (``DoubleServer/dropConnection(_:)``).
    case dropConnection
    /// Send GOAWAY (`NO_ERROR`) with `lastStreamID` and `debugData` instead of answering, then close.
    case goAway(lastStreamID: Int, debugData: Data)
}

/// A double's core, as its connection handlers see it.
protocol DoubleRequestHandling: Sendable {
    /// Validates and records a request and decides what to do with it.
    func handle(_ request: DoubleRequest) -> DoubleAction
    /// A stream opened on a connection (HTTP/2 only).
    func streamOpened(on connectionID: Int)
    /// A stream of a connection closed, answered or not (HTTP/2 only).
    func streamClosed(on connectionID: Int)
    /// An answer was written (after its delay, if any).
    func answerWritten(_ response: DoubleResponse)
}

extension DoubleRequestHandling {
    func streamOpened(on connectionID: Int) {}
    func streamClosed(on connectionID: Int) {}
    func answerWritten(_ response: DoubleResponse) {}
}
