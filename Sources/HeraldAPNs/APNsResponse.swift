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

    /// How long to wait after `429 TooManyRequests` (too many pushes to one device).
    static let tooManyRequestsDelay: Duration = .seconds(60)

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

    /// The final classification (after any token renewal or connection recycling the provider did).
    var deliveryResult: DeliveryResult {
        switch (status, reason) {
        case (200, _):
            .delivered(providerMessageID: apnsID)
        case (410, _), (400, .badDeviceToken), (400, .deviceTokenNotForTopic):
            .deadToken(reason: reasonText)
        case (429, .tooManyRequests):
            .retry(reason: reasonText, after: Self.tooManyRequestsDelay)
        case (429, _), (500...599, _), (403, .expiredProviderToken):
            .retry(reason: reasonText, after: nil)
        case (400...499, _):
            .failed(reason: reasonText)
        default:
            .retry(reason: reasonText, after: nil)
        }
    }
}
