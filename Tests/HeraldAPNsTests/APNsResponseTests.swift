import Foundation
import HeraldCore
import Testing

@testable import HeraldAPNs

@Suite("APNs response classification")
struct APNsResponseTests {
    private func classify(_ status: Int, _ reason: String?) -> DeliveryResult {
        let body = reason.map { Data(#"{"reason":"\#($0)"}"#.utf8) } ?? Data()
        return APNsClassification.result(of: APNsResponse(status: status, apnsID: "id", body: body))
    }

    @Test func classifiesEveryClass() {
        #expect(classify(200, nil) == .delivered(providerMessageID: "id"))
        #expect(classify(410, "Unregistered") == .deadToken(reason: "Unregistered"))
        #expect(classify(410, "ExpiredToken") == .deadToken(reason: "ExpiredToken"))
        #expect(classify(400, "BadDeviceToken") == .deadToken(reason: "BadDeviceToken"))
        #expect(classify(400, "DeviceTokenNotForTopic") == .deadToken(reason: "DeviceTokenNotForTopic"))
        #expect(classify(429, "TooManyRequests") == .retry(reason: "TooManyRequests", after: .seconds(60)))
        #expect(classify(429, "TooManyProviderTokenUpdates") == .retry(reason: "TooManyProviderTokenUpdates", after: nil))
        #expect(classify(500, "InternalServerError") == .retry(reason: "InternalServerError", after: nil))
        #expect(classify(503, "ServiceUnavailable") == .retry(reason: "ServiceUnavailable", after: nil))
        #expect(classify(503, nil) == .retry(reason: "HTTP 503", after: nil))
        #expect(classify(403, "ExpiredProviderToken") == .retry(reason: "ExpiredProviderToken", after: nil))
        #expect(classify(413, "PayloadTooLarge") == .failed(reason: "PayloadTooLarge"))
        #expect(classify(403, "Forbidden") == .failed(reason: "Forbidden"))
        #expect(classify(403, "InvalidProviderToken") == .failed(reason: "InvalidProviderToken"))
        #expect(classify(400, "BadCollapseId") == .failed(reason: "BadCollapseId"))
        #expect(classify(404, "BadPath") == .failed(reason: "BadPath"))
        #expect(classify(405, "MethodNotAllowed") == .failed(reason: "MethodNotAllowed"))
    }

    @Test func readsTheTimestampAndKeepsUnknownReasons() {
        let response = APNsResponse(
            status: 410, apnsID: nil, body: Data(#"{"reason":"SomethingNew","timestamp":1700000000123}"#.utf8))
        #expect(response.reason == .unknown("SomethingNew"))
        #expect(response.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(APNsErrorReason(rawValue: "TooManyProviderTokenUpdates") == .tooManyProviderTokenUpdates)
        #expect(APNsErrorReason.badDeviceToken.rawValue == "BadDeviceToken")
        #expect(APNsResponse(status: 500, apnsID: nil, body: Data("<html>".utf8)).reason == nil)
    }
}
