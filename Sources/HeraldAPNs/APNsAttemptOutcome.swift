import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP2
import NIOSSL

/// What came of one HTTP request to APNs, before it is classified.
enum APNsAttemptOutcome: Sendable {
    /// APNs answered.
    case answered(APNsResponse)
    /// The connection or stream went away before an answer (GOAWAY, reset, close): worth one immediate re-send.
    case connectionLost(String)
    /// The request's deadline passed.
    case timedOut
    /// Anything else (connect failure, TLS failure, cancellation…).
    case failed(String)

    /// Classifies an error thrown by AsyncHTTPClient.
    init(_ error: any Error) {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                self = .timedOut
            case .remoteConnectionClosed, .requestStreamCancelled:
                self = .connectionLost(String(describing: error))
            default:
                self = .failed(String(describing: error))
            }
        case is NIOHTTP2Errors.StreamClosed:
            // Streams above a GOAWAY's last stream id, or reset by the server, were not processed.
            self = .connectionLost(String(describing: error))
        case let error as ChannelError where error == .ioOnClosedChannel || error == .eof || error == .outputClosed:
            self = .connectionLost(String(describing: error))
        case let error as NIOSSLError where error == .uncleanShutdown:
            self = .connectionLost(String(describing: error))
        case let error as IOError where [ECONNRESET, EPIPE].contains(error.errnoCode):
            self = .connectionLost(String(describing: error))
        case is CancellationError:
            self = .failed("cancelled")
        default:
            self = .failed(String(describing: error))
        }
    }
}
