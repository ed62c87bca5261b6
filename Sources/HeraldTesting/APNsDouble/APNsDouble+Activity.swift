import Foundation
import HeraldCore

extension APNsDouble {
    /// One header field as the double received it.
    public typealias Header = ReceivedHeader

    /// The provider token of a request, decoded (whether or not it verified).
    public struct DecodedProviderToken: Sendable, Equatable {
        /// The compact JWT.
        public var jwt: String
        /// The JOSE header.
        public var header: JSONObject
        /// The claims.
        public var claims: JSONObject

        /// The header's `kid`.
        public var keyID: String? { header["kid"]?.stringValue }
        /// The claim `iss`.
        public var teamID: String? { claims["iss"]?.stringValue }
        /// The claim `iat`, if it is an integer.
        public var issuedAt: Int? {
            if case .int(let value) = claims["iat"] { return value }
            return nil
        }
    }

    /// What the double did with a request.
    public enum Outcome: Sendable, Equatable {
        /// Answered with a status; `reason` is `nil` for 200.
        case answered(status: Int, reason: String?)
        /// Never answered (``Fault/stall``).
        case stalled
        /// The double closed the connection instead of answering (``Fault/dropConnection``).
        case droppedConnection
        /// The double sent GOAWAY instead of answering (``Fault/goAway(reason:)``).
        case goAway(reason: String)
    }

    /// One request (one HTTP/2 stream), accepted or not.
    public struct RecordedRequest: Sendable {
        /// Position in the activity log, from 1.
        public var sequence: Int
        /// The connection it came on (see ``ConnectionEvent``).
        public var connectionID: Int
        /// Its HTTP/2 stream id.
        public var streamID: Int
        /// When it arrived, by the double's clock.
        public var receivedAt: Date
        /// Every header field in the order received, pseudo-headers first.
        public var headers: [Header]
        /// The raw body.
        public var body: Data
        /// The decoded provider token, when the `authorization` header held a decodable JWT.
        public var providerToken: DecodedProviderToken?
        /// Whether the provider token passed every check (signature, key, team, age, update rule).
        public var providerTokenIsValid: Bool
        /// What the double did.
        public var outcome: Outcome
        /// The `apns-id` of the answer (echoed or generated), when answered.
        public var responseAPNsID: String?
        /// Things Apple would tolerate but that look wrong (missing push type, indexed `authorization`…).
        public var warnings: [String]
        /// Streams open on the connection when this one arrived, itself included.
        public var openStreams: Int

        /// The first value of a header field.
        public func header(_ name: String) -> String? {
            headers.first { $0.name == name }?.value
        }

        /// Every value of a header field, in order.
        public func headerValues(_ name: String) -> [String] {
            headers.filter { $0.name == name }.map(\.value)
        }

        /// `:method`.
        public var method: String? { header(":method") }
        /// `:path`.
        public var path: String? { header(":path") }
        /// The device token from `:path`, when it has the form `/3/device/<token>`.
        public var deviceToken: String? {
            guard let path, path.hasPrefix(APNsDoubleCore.devicePathPrefix) else { return nil }
            return String(path.dropFirst(APNsDoubleCore.devicePathPrefix.count))
        }
        /// The answered status, if any.
        public var status: Int? {
            if case .answered(let status, _) = outcome { return status }
            return nil
        }
        /// The answered error reason, if any.
        public var reason: String? {
            if case .answered(_, let reason) = outcome { return reason }
            return nil
        }
    }

    /// Running totals of the double's traffic.
    public struct Counters: Sendable, Equatable {
        /// Requests received (complete streams), whatever became of them.
        public var requests = 0
        /// Answers written, by HTTP status (a delayed answer counts when it is written).
        public var answers: [Int: Int] = [:]
        /// Answers `200` written.
        public var accepted: Int { answers[200] ?? 0 }

        /// No traffic yet.
        public init() {}
    }

    /// Something that happened to a connection.
    public struct ConnectionEvent: Sendable, Equatable {
        /// The connection, numbered from 1 in order of acceptance.
        public var connectionID: Int
        /// What happened.
        public var kind: Kind
        /// When, by the double's clock.
        public var at: Date

        /// The kinds of connection events.
        public enum Kind: Sendable, Equatable {
            /// TCP accepted.
            case opened
            /// TLS done without ALPN `h2` (the protocol offered instead, if any): the connection is closed.
            case rejectedALPN(String?)
            /// A SETTINGS frame was sent with this MAX_CONCURRENT_STREAMS (1 at first, raised after a valid token).
            case settingsSent(maxConcurrentStreams: Int)
            /// GOAWAY was sent.
            case goAwaySent(lastStreamID: Int, reason: String)
            /// The double closed the TCP connection abruptly.
            case dropped
            /// The connection is closed.
            case closed
        }
    }
}
