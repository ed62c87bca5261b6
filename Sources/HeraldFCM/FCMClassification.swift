import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldProviderKit
import NIOCore
import NIOHTTP2
import NIOSSL

/// FCM's answer to one `messages:send`, reduced to what classification needs.
struct FCMResponse: Sendable, Equatable {
    var status: Int
    /// The success body's `name` (`projects/{id}/messages/{message_id}`).
    var messageName: String?
    /// `error.details[]` of `@type` `type.googleapis.com/google.firebase.fcm.v1.FcmError`: its `errorCode`.
    var errorCode: String?
    /// `error.status`, the canonical code (`NOT_FOUND`, `UNAUTHENTICATED`, …).
    var canonicalStatus: String?
    /// `error.message`.
    var message: String?
    /// The `field`s of `google.rpc.BadRequest` `fieldViolations`, e.g. `message.token`.
    var fieldViolations: [String]
    /// `Retry-After`, in seconds.
    var retryAfter: Int?

    init(
        status: Int, messageName: String? = nil, errorCode: String? = nil, canonicalStatus: String? = nil, message: String? = nil,
        fieldViolations: [String] = [], retryAfter: Int? = nil
    ) {
        self.status = status
        self.messageName = messageName
        self.errorCode = errorCode
        self.canonicalStatus = canonicalStatus
        self.message = message
        self.fieldViolations = fieldViolations
        self.retryAfter = retryAfter
    }

    /// Parses Google's JSON (`{"name"}` or `{"error": {"code", "message", "status", "details"}}`); a body that is not
    /// JSON leaves the fields empty.
    init(status: Int, body: Data, retryAfterHeader: String?) {
        self.init(status: status, retryAfter: retryAfterHeader.flatMap(Self.seconds(fromRetryAfter:)))
        guard let json = (try? JSONValue.decode(body))?.objectValue else { return }
        messageName = json["name"]?.stringValue
        guard let error = json["error"]?.objectValue else { return }
        canonicalStatus = error["status"]?.stringValue
        message = error["message"]?.stringValue
        guard case .array(let details)? = error["details"] else { return }
        for detail in details.compactMap(\.objectValue) {
            switch detail["@type"]?.stringValue {
            case "type.googleapis.com/google.firebase.fcm.v1.FcmError":
                errorCode = detail["errorCode"]?.stringValue ?? errorCode
            case "type.googleapis.com/google.rpc.BadRequest":
                if case .array(let violations)? = detail["fieldViolations"] {
                    fieldViolations += violations.compactMap { $0.objectValue?["field"]?.stringValue }
                }
            default:
                break
            }
        }
    }

    /// `Retry-After` as delta-seconds (what Google sends); an HTTP date is not used.
    static func seconds(fromRetryAfter text: String) -> Int? {
        Int(text.trimmingCharacters(in: .whitespaces)).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// `errorCode` (or the canonical status when there is none) and the message: what is recorded as the reason.
    var reason: String {
        let code = errorCode ?? canonicalStatus ?? "HTTP \(status)"
        guard let message, !message.isEmpty else { return code }
        return "\(code): \(message)"
    }
}

/// What one request to FCM came to, before classification.
enum FCMAttemptOutcome: Sendable, Equatable {
    case answered(FCMResponse)
    /// The request went out on a connection that had just closed (`I/O on closed channel`): FCM never saw it.
    case notSent(String)
    /// The connection closed or was reset before the answer: FCM may or may not have taken the message.
    case connectionLost(String)
    case timedOut
    case failed(String)
}

/// Every decision Herald makes about what FCM said, in one place. FCM is classified by `error.details[].errorCode`,
/// never by the message text (Google's `ErrorCode` reference, firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode;
/// docs/operations.md).
///
/// | What happened | Verdict |
/// |---|---|
/// | `200` | delivered, with the message `name` |
/// | `UNREGISTERED` (404) | dead token: the device is inactive until it registers again |
/// | `INVALID_ARGUMENT` whose field violation is `message.token` | dead token |
/// | `SENDER_ID_MISMATCH` (403) | dead token (the token belongs to another Firebase project) |
/// | `QUOTA_EXCEEDED` (429) | retry, no earlier than `Retry-After` and never earlier than 60 s (Google's minimum back-off) |
/// | `UNAVAILABLE` (503), `INTERNAL` (500), any other `5xx` | retry, no earlier than `Retry-After` when given |
/// | `401` without an `errorCode` (the access token), the first time | renew the access token and re-send |
/// | the same again | retry with back-off |
/// | `THIRD_PARTY_AUTH_ERROR` (401), other `INVALID_ARGUMENT`s, every other `4xx` | failed for good, reason recorded |
/// | the request was not sent (its connection had just closed), the first time | re-send at once |
/// | a timeout or any other transport error | retry with back-off (FCM may have accepted the message: no re-send now) |
enum FCMClassification {
    /// Google: "minimum initial retry delay of 1 minute" after `QUOTA_EXCEEDED`.
    static let quotaExceededDelay: Duration = .seconds(60)

    /// What the provider does after one request: renew the access token after a `401` without an `errorCode`, send
    /// again once when the request never left, otherwise finish.
    static func nextStep(after outcome: FCMAttemptOutcome, hasRenewedToken: Bool, hasResent: Bool, timeout: String) -> AttemptStep {
        switch outcome {
        case .answered(let response):
            if response.status == 401, response.errorCode == nil, !hasRenewedToken { return .renewCredentialAndResend }
            return .finish(result(of: response))
        case .notSent(let description):
            if !hasResent { return .resend }
            return .finish(.retry(reason: "FCM request not sent: \(description)", after: nil))
        case .connectionLost(let description):
            return .finish(.retry(reason: "FCM connection lost before the answer: \(description)", after: nil))
        case .timedOut:
            return .finish(.retry(reason: "no answer from FCM within \(timeout)", after: nil))
        case .failed(let description):
            return .finish(.retry(reason: description, after: nil))
        }
    }

    /// The verdict for an answer.
    static func result(of response: FCMResponse) -> DeliveryResult {
        if response.status == 200 { return .delivered(providerMessageID: response.messageName) }
        let retryAfter = response.retryAfter.map { Duration.seconds($0) }
        switch response.errorCode {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .deadToken(reason: response.reason)
        case "INVALID_ARGUMENT" where response.fieldViolations.contains("message.token"):
            return .deadToken(reason: response.reason)
        case "QUOTA_EXCEEDED":
            return .retry(reason: response.reason, after: max(retryAfter ?? .zero, quotaExceededDelay))
        case "UNAVAILABLE", "INTERNAL":
            return .retry(reason: response.reason, after: retryAfter)
        case "THIRD_PARTY_AUTH_ERROR", "INVALID_ARGUMENT":
            return .failed(reason: response.reason)
        default:
            if response.status == 429 {
                return .retry(reason: response.reason, after: max(retryAfter ?? .zero, quotaExceededDelay))
            }
            if response.status >= 500 || response.status == 401 { return .retry(reason: response.reason, after: retryAfter) }
            return .failed(reason: response.reason)
        }
    }

    /// Whether the client must be replaced: its connection is gone (see ``FCMClientPool``).
    static func replacesConnection(after outcome: FCMAttemptOutcome) -> Bool {
        switch outcome {
        case .notSent, .connectionLost: true
        case .answered, .timedOut, .failed: false
        }
    }

    /// A transport error as an outcome.
    static func outcome(of error: any Error) -> FCMAttemptOutcome {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout: return .timedOut
            case .remoteConnectionClosed, .requestStreamCancelled: return .connectionLost("\(error)")
            default: return .failed("FCM request failed: \(error)")
            }
        case let error as ChannelError where error == .ioOnClosedChannel:
            return .notSent("\(error)")
        case let error as ChannelError where error == .eof || error == .outputClosed:
            return .connectionLost("\(error)")
        case is NIOHTTP2Errors.StreamClosed:
            return .connectionLost("\(error)")
        case let error as NIOSSLError where error == .uncleanShutdown:
            return .connectionLost("\(error)")
        case let error as IOError where [ECONNRESET, EPIPE].contains(error.errnoCode):
            return .connectionLost("\(error)")
        default:
            break
        }
        return .failed("FCM request failed: \(error)")
    }
}
