import Crypto
import Foundation
import HeraldCore
import HeraldProviderKit
import NIOCore
import Testing

@testable import HeraldWebPush

/// The provider's pure rules: the RFC 8030 headers, the classification table, the configuration's checks.
@Suite("Web Push provider rules")
struct WebPushProviderRulesTests {
    @Test func ttlIsTheSecondsLeftAndNeverNegative() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(WebPushRequestHeaders.timeToLive(expiresAt: now.addingTimeInterval(3_600.7), now: now) == 3_600)
        #expect(WebPushRequestHeaders.timeToLive(expiresAt: now.addingTimeInterval(-5), now: now) == 0)
    }

    @Test func urgencyFollowsTheLevel() {
        #expect(WebPushRequestHeaders.urgency(.critical) == "high")
        #expect(WebPushRequestHeaders.urgency(.timeSensitive) == "high")
        #expect(WebPushRequestHeaders.urgency(.active) == "normal")
        #expect(WebPushRequestHeaders.urgency(nil) == "normal")
        #expect(WebPushRequestHeaders.urgency(.passive) == "low")
    }

    @Test func topicIsTheCollapseIdWhenAServiceTakesItAndADigestOtherwise() {
        #expect(WebPushRequestHeaders.topic("review-123") == "review-123")
        #expect(WebPushRequestHeaders.topic(nil) == nil)
        #expect(WebPushRequestHeaders.topic("") == nil)
        let long = String(repeating: "a", count: 33)
        let digest = WebPushRequestHeaders.topic(long)
        #expect(digest?.count == 32)
        #expect(digest == WebPushRequestHeaders.topic(long))  // the same id, the same topic
        #expect(WebPushRequestHeaders.topic("front door")?.count == 32)  // a space is not base64url
        #expect(WebPushRequestHeaders.topic("front door") != WebPushRequestHeaders.topic("back door"))
    }

    @Test(arguments: [
        (201, DeliveryResult.delivered(providerMessageID: "/m/1")), (200, .delivered(providerMessageID: "/m/1")),
        (202, .delivered(providerMessageID: "/m/1")), (404, .deadToken(reason: "HTTP 404: gone")), (410, .deadToken(reason: "HTTP 410: gone")),
        (413, .failed(reason: "HTTP 413: gone")), (400, .failed(reason: "HTTP 400: gone")), (401, .failed(reason: "HTTP 401: gone")),
        (403, .failed(reason: "HTTP 403: gone")), (301, .failed(reason: "HTTP 301: gone")),
        (429, .retry(reason: "HTTP 429: gone", after: .seconds(7))), (500, .retry(reason: "HTTP 500: gone", after: .seconds(7))),
        (503, .retry(reason: "HTTP 503: gone", after: .seconds(7))),
    ])
    func everyAnswerHasOneVerdict(status: Int, verdict: DeliveryResult) {
        let response = WebPushResponse(status: status, retryAfter: 7, text: "gone", location: "/m/1")
        #expect(WebPushClassification.result(of: response) == verdict)
    }

    @Test func transportOutcomesAreRetriedAndAPolicyRefusalFailsForGood() {
        func step(_ outcome: WebPushAttemptOutcome) -> AttemptStep { WebPushClassification.nextStep(after: outcome, timeout: "5 s") }
        #expect(step(.timedOut) == .finish(.retry(reason: "no answer from the push service within 5 s", after: nil)))
        #expect(step(.unresolved("x")) == .finish(.retry(reason: "Web Push endpoint does not resolve: x", after: nil)))
        #expect(step(.refusedByPolicy("x")) == .finish(.failed(reason: "Web Push endpoint refused: x")))
    }

    @Test func theReasonIsTheBodyBoundedAndWithoutControlCharacters() {
        #expect(WebPushClassification.reasonText(ByteBuffer(string: "  bad\nrequest\u{0}  ")) == "bad request")
        #expect(WebPushClassification.reasonText(ByteBuffer(string: String(repeating: "x", count: 5_000))).count == 200)
        #expect(WebPushClassification.seconds(fromRetryAfter: " 30 ") == 30)
        #expect(WebPushClassification.seconds(fromRetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }

    @Test func theConfigurationNamesTheOptionAtFault() {
        #expect(WebPushConfiguration(subject: "ops").settingProblems().first?.option == .subject)
        #expect(WebPushConfiguration(subject: "mailto:ops@example.com").settingProblems().isEmpty)
        #expect(WebPushConfiguration(vapidPrivateKey: "short").settingProblems().first?.option == .privateKey)
        #expect(WebPushConfiguration(allowedHosts: ["a b"]).settingProblems().first?.option == .allowedHosts)
        #expect(WebPushConfiguration(maximumPerHost: 0).settingProblems().first?.option == .maximumPerHost)
    }

    @Test func theKeyIsTakenAsRawBase64URLOrPEMAndCheckNeverPrintsIt() throws {
        let raw = VAPIDKey.generate()
        let key = try VAPIDKey.parse(raw)
        #expect(try VAPIDKey.parse(key.pemRepresentation).rawRepresentation == key.rawRepresentation)
        #expect(try VAPIDKey.parse(key.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")).rawRepresentation == key.rawRepresentation)
        let lines = try WebPushConfiguration(subject: "https://example.com/contact", vapidPrivateKey: raw).check()
        #expect(lines.contains { $0.contains(try! VAPIDKey.publicKey(of: raw)) })
        #expect(!lines.joined().contains(raw))
    }
}
