import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldProviderKit
import NIOCore
import NIOSSL

/// A push service's answer to one message, reduced to what classification needs.
struct WebPushResponse: Sendable, Equatable {
    var status: Int
    /// `Retry-After` in seconds (delta-seconds; an HTTP date is not used).
    var retryAfter: Int?
    /// The answer's body text, bounded (``WebPushClassification/maximumReasonLength``): the service's reason.
    var text: String
    /// `Location`: the message's resource, kept as the provider message id.
    var location: String?
}

/// What one request to a push service came to, before classification.
enum WebPushAttemptOutcome: Sendable, Equatable {
    case answered(WebPushResponse)
    /// Herald refused to connect: the endpoint resolves to an address the egress policy forbids.
    case refusedByPolicy(String)
    /// The host name could not be resolved.
    case unresolved(String)
    case timedOut
    case failed(String)
    /// Not sent: the host's cap (or every client) is taken; the delivery slot is given back and it is tried later.
    case busy(String)
}

/// Every decision Herald makes about what a push service said, in one place (RFC 8030 §5, RFC 8292 §4, and what
/// browsers' services answer; docs/operations.md, "Web Push").
///
/// | What happened | Verdict |
/// |---|---|
/// | `200`, `201`, `202` | delivered (`Location` kept as the message id) |
/// | `404`, `410` | dead token: the subscription is gone; the device is inactive until it registers again |
/// | `413` | failed for good (the payload is too large) |
/// | `429`, every `5xx` | retry, no earlier than `Retry-After` when given |
/// | `400`, `401`, `403`, every other status (redirects included: they are never followed) | failed for good, with the service's reason |
/// | the endpoint resolves to a private or special-purpose address not allowed | failed for good |
/// | the host does not resolve, a timeout, any other transport error | retry with back-off |
/// | not sent: the host already has its cap of requests in flight (or every client is busy) | retry with back-off, at least 1 s |
///
/// VAPID tokens are signed locally and never refused as expired before their time, so a `401` or `403` is a key the
/// subscription was not made with: nothing to renew.
enum WebPushClassification {
    /// How much of an answer's body is kept as the reason.
    static let maximumReasonLength = 200

    static func nextStep(after outcome: WebPushAttemptOutcome, timeout: String) -> AttemptStep {
        switch outcome {
        case .answered(let response): .finish(result(of: response))
        case .refusedByPolicy(let reason): .finish(.failed(reason: "Web Push endpoint refused: \(reason)"))
        case .unresolved(let reason): .finish(.retry(reason: "Web Push endpoint does not resolve: \(reason)", after: nil))
        case .timedOut: .finish(.retry(reason: "no answer from the push service within \(timeout)", after: nil))
        case .failed(let description): .finish(.retry(reason: description, after: nil))
        case .busy(let reason): .finish(.retry(reason: "not sent yet: \(reason)", after: .seconds(1)))
        }
    }

    /// The verdict for an answer.
    static func result(of response: WebPushResponse) -> DeliveryResult {
        let reason = response.text.isEmpty ? "HTTP \(response.status)" : "HTTP \(response.status): \(response.text)"
        switch response.status {
        case 200, 201, 202: return .delivered(providerMessageID: response.location)
        case 404, 410: return .deadToken(reason: reason)
        case 429, 500...599: return .retry(reason: reason, after: response.retryAfter.map { .seconds($0) })
        default: return .failed(reason: reason)
        }
    }

    /// A transport error as an outcome.
    static func outcome(of error: any Error) -> WebPushAttemptOutcome {
        if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .connectTimeout {
            return .timedOut
        }
        return .failed("push service: \(error)")
    }

    /// `Retry-After` as delta-seconds.
    static func seconds(fromRetryAfter text: String?) -> Int? {
        text.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The body as a reason: UTF-8, control characters as spaces, at most ``maximumReasonLength`` characters.
    static func reasonText(_ body: ByteBuffer) -> String {
        let text = String(decoding: body.readableBytesView.prefix(maximumReasonLength * 4), as: UTF8.self)
        let cleaned = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
        return String(cleaned.trimmingCharacters(in: .whitespacesAndNewlines).prefix(maximumReasonLength))
    }
}

extension WebPushAttemptOutcome: AttemptOutcome {
    var answeredStatus: Int? {
        if case .answered(let response) = self { response.status } else { nil }
    }

    /// Push services give no reason codes: `none` for an answer; without one `egress_refused`, `timeout` or `error`.
    var metricReason: String {
        switch self {
        case .answered: "none"
        case .refusedByPolicy: "egress_refused"
        case .timedOut: "timeout"
        case .unresolved, .failed: "error"
        case .busy: "host_busy"
        }
    }
}
