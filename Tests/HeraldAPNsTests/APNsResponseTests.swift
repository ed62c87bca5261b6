import Foundation
import HeraldCore
import HeraldProviderKit
import NIOHTTP2
import Testing

@testable import HeraldAPNs

@Suite("APNs response classification")
struct APNsResponseTests {
    private func classify(_ status: Int, _ reason: String?) -> DeliveryResult {
        let body = reason.map { Data(#"{"reason":"\#($0)"}"#.utf8) } ?? Data()
        return APNsClassification.result(of: APNsResponse(status: status, apnsID: "id", body: body))
    }

    /// A header error swift-nio-http2 raises when Herald sends is final: every attempt would meet it again.
    @Test func aHeaderTheHTTP2LayerRefusesIsAPermanentFailure() {
        let errors: [any Error] = [
            NIOHTTP2Errors.invalidHTTP2HeaderFieldValue(name: "apns-collapse-id", value: "a\r\nb"),
            NIOHTTP2Errors.invalidHTTP2HeaderFieldName("Bad Name"),
            NIOHTTP2Errors.forbiddenHeaderField(name: "connection", value: "close"),
            NIOHTTP2Errors.invalidPseudoHeaderValue(name: ":path", value: "/a\nb"),
        ]
        for error in errors {
            let step = APNsClassification.nextStep(
                after: APNsClassification.outcome(of: error), hasRenewedToken: false, hasResent: false, timeout: "10 s")
            guard case .finish(.failed(let reason)) = step else {
                Issue.record("\(error): \(step)")
                continue
            }
            #expect(reason.hasPrefix("HTTP/2 refused the request's headers"))
        }
        #expect(APNsClassification.isRefusedHeaderValue("a\u{0}b"))
        #expect(!APNsClassification.isRefusedHeaderValue("a\tb ☃"))
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
