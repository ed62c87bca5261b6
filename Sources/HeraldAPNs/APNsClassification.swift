import Foundation
import HeraldCore
import HeraldProviderKit
import NIOCore
import NIOHTTP2
import NIOSSL

/// Every decision Herald makes about what APNs said, in one place: transport errors, answers, and what the provider
/// does next (finish with a verdict, renew the provider token and re-send, or re-send once on a fresh connection).
///
/// | What happened | Next step | Verdict |
/// |---|---|---|
/// | `200` | finish | ``DeliveryResult/delivered(providerMessageID:)`` with the `apns-id` |
/// | `410` (`Unregistered`, `ExpiredToken`), `400 BadDeviceToken`, `400 DeviceTokenNotForTopic` | finish | ``DeliveryResult/deadToken(reason:)`` |
/// | `429 TooManyRequests` (one device) | finish | retry, no earlier than 60 s |
/// | `403 ExpiredProviderToken`, the first time | renew the provider token, re-send | |
/// | `403 ExpiredProviderToken` again, other `429`s, `5xx` | finish | retry with back-off |
/// | `429 TooManyProviderTokenUpdates` | replace the connection, finish | retry with back-off |
/// | `413` and every other `4xx` | finish | ``DeliveryResult/failed(reason:)`` |
/// | a collapse id with CR, LF or NUL (checked before sending), or the HTTP/2 layer refuses a header | finish | ``DeliveryResult/failed(reason:)`` |
/// | connection closed, reset or GOAWAY before the answer, the first time | re-send on a fresh connection | |
/// | the same again, a timeout, any other transport error | finish | retry with back-off |
enum APNsClassification {
    /// How long to wait after `429 TooManyRequests` (too many pushes to one device).
    static let tooManyRequestsDelay: Duration = .seconds(60)

    /// The next step after `outcome`, given what this attempt already tried.
    static func nextStep(after outcome: APNsAttemptOutcome, hasRenewedToken: Bool, hasResent: Bool, timeout: String) -> AttemptStep {
        switch outcome {
        case .answered(let response):
            if response.status == 403, response.reason == .expiredProviderToken, !hasRenewedToken { return .renewCredentialAndResend }
            return .finish(result(of: response))
        case .connectionLost(let description):
            if !hasResent { return .resend }
            return .finish(.retry(reason: "connection closed before the answer: \(description)", after: nil))
        case .timedOut:
            return .finish(.retry(reason: "no answer within \(timeout)", after: nil))
        case .failed(let description):
            return .finish(.retry(reason: description, after: nil))
        case .refusedLocally(let description):
            return .finish(.failed(reason: description))
        }
    }

    /// Whether the connection that carried the request must be replaced (it was lost, or APNs refuses more token
    /// updates on it).
    static func replacesConnection(after outcome: APNsAttemptOutcome) -> Bool {
        switch outcome {
        case .answered(let response): response.reason == .tooManyProviderTokenUpdates
        case .connectionLost: true
        case .timedOut, .failed, .refusedLocally: false
        }
    }

    /// The verdict for an answer.
    static func result(of response: APNsResponse) -> DeliveryResult {
        let reason = response.reasonText
        switch (response.status, response.reason) {
        case (200, _):
            return .delivered(providerMessageID: response.apnsID)
        case (410, _), (400, .badDeviceToken), (400, .deviceTokenNotForTopic):
            return .deadToken(reason: reason)
        case (429, .tooManyRequests):
            return .retry(reason: reason, after: tooManyRequestsDelay)
        case (429, _), (500...599, _), (403, .expiredProviderToken):
            return .retry(reason: reason, after: nil)
        case (400...499, _):
            return .failed(reason: reason)
        default:
            return .retry(reason: reason, after: nil)
        }
    }

    /// Whether `error` is swift-nio-http2 refusing to send a request's headers (RFC 9113 §8.2: a value with CR, LF
    /// or NUL, an invalid name, a connection-specific field).
    static func isRefusedHeader(_ error: any Error) -> Bool {
        switch error {
        case is NIOHTTP2Errors.InvalidHTTP2HeaderFieldValue, is NIOHTTP2Errors.InvalidHTTP2HeaderFieldName,
            is NIOHTTP2Errors.ForbiddenHeaderField, is NIOHTTP2Errors.InvalidPseudoHeaderValue:
            true
        default:
            false
        }
    }

    /// Whether swift-nio-http2 refuses `value` as a header value: it holds NUL, LF or CR (RFC 9113 §8.2.1).
    static func isRefusedHeaderValue(_ value: String) -> Bool {
        value.utf8.contains { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D }
    }

    /// What an error from connecting or from a request on an ``APNsConnection`` means.
    static func outcome(of error: any Error) -> APNsAttemptOutcome {
        switch error {
        case let failure as APNsConnection.Failure:
            switch failure {
            case .noAnswerWithin:
                return .timedOut
            case .streamClosedBeforeAnswer, .notAcceptingStreams:
                return .connectionLost(failure.description)
            case .notHTTP2, .closedBeforeReady, .notReadyWithin, .answerWithoutStatus, .answerTooLarge:
                return .failed(failure.description)
            }
        case _ where isRefusedHeader(error):
            // The request itself cannot be sent: every attempt would be refused the same way.
            return .refusedLocally("HTTP/2 refused the request's headers: \(error)")
        case is NIOHTTP2Errors.CreatedStreamAfterGoaway:
            return .connectionLost(String(describing: error))
        case is NIOHTTP2Errors.StreamClosed:
            // Streams above a GOAWAY's last stream id, or reset by the server, were not processed.
            return .connectionLost(String(describing: error))
        case let error as ChannelError where error == .ioOnClosedChannel || error == .eof || error == .outputClosed:
            return .connectionLost(String(describing: error))
        case let error as NIOSSLError where error == .uncleanShutdown:
            return .connectionLost(String(describing: error))
        case let error as IOError where [ECONNRESET, EPIPE].contains(error.errnoCode):
            return .connectionLost(String(describing: error))
        case is CancellationError:
            return .failed("cancelled")
        default:
            return .failed(String(describing: error))
        }
    }
}

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
    /// The HTTP/2 layer refused to send the request (an invalid header value): no attempt can succeed.
    case refusedLocally(String)
}
