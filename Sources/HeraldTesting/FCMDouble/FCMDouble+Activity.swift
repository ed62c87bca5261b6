import Foundation
import HeraldCore

extension FCMDouble {
    /// Whom a message was addressed to: the one `target` field of FCM's `Message`.
    public enum Target: Sendable, Equatable {
        /// `message.token`: a registration token.
        case token(String)
        /// `message.topic`: a topic name (without `/topics/`).
        case topic(String)
        /// `message.condition`: a topic condition such as `'a' in topics && 'b' in topics`.
        case condition(String)
        /// `message.fid`: a Firebase installation id (the newest API's replacement for `token`).
        case fid(String)
    }

    /// A message the double answered `200` for (requests with `validate_only: true` are not delivered and are not
    /// here; they are in ``FCMDouble/requests``).
    public struct AcceptedMessage: Sendable {
        /// The `name` answered: `projects/<project>/messages/<number>`.
        public var name: String
        /// Whom it was addressed to.
        public var target: Target
        /// The request's `message` object as received.
        public var message: JSONObject
        /// The access token of the request's `authorization` header.
        public var accessToken: String
        /// The connection it came on, numbered from 1 in order of acceptance.
        public var connectionID: Int
        /// When it arrived, by the double's clock.
        public var receivedAt: Date

        /// The registration token, if the target is one.
        public var token: String? {
            if case .token(let token) = target { return token }
            return nil
        }
        /// The topic, if the target is one.
        public var topic: String? {
            if case .topic(let topic) = target { return topic }
            return nil
        }
        /// The condition, if the target is one.
        public var condition: String? {
            if case .condition(let condition) = target { return condition }
            return nil
        }
        /// `message.data` (every value is a string, or the message would have been refused).
        public var data: [String: String] {
            message["data"]?.objectValue?.compactMapValues(\.stringValue) ?? [:]
        }
    }

    /// What the double did with a request to the send endpoint (or to any path but `/token`).
    public enum Outcome: Sendable, Equatable {
        /// Answered with this HTTP status.
        case answered(status: Int)
        /// Never answered (``FCMDouble/stallNext(_:)``).
        case stalled
        /// The double closed the connection instead of answering (``FCMDouble/dropConnectionOnNextRequest()``).
        case droppedConnection
    }

    /// The error an answer carried, as Google's error body says it.
    public struct AnsweredError: Sendable, Equatable {
        /// `error.code`: the HTTP status.
        public var code: Int
        /// `error.status`: the canonical status, e.g. `NOT_FOUND`.
        public var status: String
        /// `error.message`.
        public var message: String
        /// The `errorCode` of the `google.firebase.fcm.v1.FcmError` detail, when there is one (`UNREGISTERED`…).
        public var errorCode: String?
    }

    /// One request to the send endpoint (or to any path but `/token`), whatever became of it.
    public struct RecordedRequest: Sendable {
        /// Position among the recorded send requests, from 1.
        public var sequence: Int
        /// The connection it came on.
        public var connectionID: Int
        /// Its HTTP/2 stream id (over HTTP/1.1: its position on the connection).
        public var streamID: Int
        /// When it arrived, by the double's clock.
        public var receivedAt: Date
        /// Every header field in the order received, pseudo-headers first.
        public var headers: [ReceivedHeader]
        /// The raw body.
        public var body: Data
        /// The bearer token of the `authorization` header, if there was one (empty when it held another scheme).
        public var accessToken: String?
        /// The `message` object, when the body had one.
        public var message: JSONObject?
        /// Whether the body asked for `validate_only`.
        public var validateOnly: Bool
        /// What the double did.
        public var outcome: Outcome
        /// The `name` answered with `200`.
        public var messageName: String?
        /// The error answered, when the status was not `200`.
        public var error: AnsweredError?

        /// The first value of a header field.
        public func header(_ name: String) -> String? {
            headers.first { $0.name == name }?.value
        }
        /// `:method`.
        public var method: String? { header(":method") }
        /// `:path`.
        public var path: String? { header(":path") }
        /// The answered status, if any.
        public var status: Int? {
            if case .answered(let status) = outcome { return status }
            return nil
        }
        /// The FCM `errorCode` answered, if any.
        public var errorCode: String? { error?.errorCode }
    }

    /// One request to the token endpoint (`POST /token`).
    public struct TokenRequest: Sendable {
        /// Position among the recorded token requests, from 1.
        public var sequence: Int
        /// The connection it came on.
        public var connectionID: Int
        /// When it arrived, by the double's clock.
        public var receivedAt: Date
        /// The `content-type` header.
        public var contentType: String?
        /// The form fields of the body (`grant_type`, `assertion`…), decoded.
        public var form: [String: String]
        /// The assertion's JOSE header, when the assertion could be decoded.
        public var assertionHeader: JSONObject?
        /// The assertion's claims, when the assertion could be decoded.
        public var assertionClaims: JSONObject?
        /// What was answered.
        public var outcome: TokenOutcome

        /// The access token granted, if any.
        public var accessToken: String? {
            if case .granted(let token, _) = outcome { return token }
            return nil
        }
        /// The answered status.
        public var status: Int {
            if case .refused(let status, _, _) = outcome { return status }
            return 200
        }
        /// The OAuth `error` answered (`invalid_grant`…), if any.
        public var error: String? {
            if case .refused(_, let error, _) = outcome { return error }
            return nil
        }
    }

    /// The answer to a token request.
    public enum TokenOutcome: Sendable, Equatable {
        /// `200` with this access token, valid for `expiresIn` seconds.
        case granted(accessToken: String, expiresIn: Int)
        /// Refused with this status and Google's OAuth error body `{"error": error, "error_description": description}`.
        case refused(status: Int, error: String, description: String)
    }

    /// Running totals of the double's traffic.
    public struct Counters: Sendable, Equatable {
        /// TCP connections accepted.
        public var connections = 0
        /// Requests to any path but `/token`, whatever became of them.
        public var sendRequests = 0
        /// Messages answered `200` and recorded as delivered (``FCMDouble/acceptedMessages``).
        public var sendsAccepted = 0
        /// Requests with `validate_only: true` answered `200`.
        public var sendsValidated = 0
        /// Send requests answered with an error status.
        public var sendsRefused = 0
        /// Requests to `/token`.
        public var tokenRequests = 0
        /// Access tokens issued.
        public var tokensIssued = 0

        /// No traffic yet.
        public init() {}
    }
}
