import Foundation
import HeraldCore

/// An answer from APNs, reduced to what Herald acts on.
struct APNsResponse: Sendable, Equatable {
    /// The HTTP status.
    var status: Int
    /// The `apns-id` response header.
    var apnsID: String?
    /// The `reason` of an error body.
    var reason: APNsErrorReason?
    /// The `timestamp` of a 410 body: when APNs learnt the token is no longer valid.
    var timestamp: Date?

    /// Parses an error body `{"reason":"…","timestamp":<ms>}`; anything else leaves reason and timestamp `nil`.
    init(status: Int, apnsID: String?, body: Data) {
        self.status = status
        self.apnsID = apnsID
        if status != 200, !body.isEmpty, let decoded = try? JSONDecoder().decode(ErrorBody.self, from: body) {
            reason = decoded.reason.map(APNsErrorReason.init(rawValue:))
            timestamp = decoded.timestamp.map { Date(timeIntervalSince1970: TimeInterval($0) / 1_000) }
        }
    }

    private struct ErrorBody: Decodable {
        var reason: String?
        var timestamp: Int64?
    }

    /// Apple's reason, or `HTTP <status>` when the body had none.
    var reasonText: String { reason?.rawValue ?? "HTTP \(status)" }
}
