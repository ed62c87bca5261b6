import Foundation
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldWebPush

/// The connection goes to the address the provider resolved and vetted, whatever the case of the endpoint's host: no
/// second lookup (DNS rebinding through upper-case letters), and ports the rules refuse never reach the HTTP client.
@Suite("Web Push exact egress")
struct WebPushExactEgressTests {
    /// Answers `127.0.0.1` for `push.herald.test` (a name no real resolver knows) and records every name asked.
    final class TestResolver: WebPushResolver {
        let asked = Mutex<[String]>([])

        func addresses(of host: String) async throws -> [IPAddressBytes] {
            asked.withLock { $0.append(host) }
            guard host == "push.herald.test", let loopback = IPAddressBytes("127.0.0.1") else {
                throw SystemWebPushResolver.Failure(description: "\(host): unknown to the test resolver")
            }
            return [loopback]
        }
    }

    @Test(arguments: ["push.herald.test", "Push.Herald.Test", "PUSH.HERALD.TEST"])
    func theVettedAddressIsReachedUnderTheHostAsWrittenWithNoSecondLookup(host: String) async throws {
        let certificates = try TestCertificates.make(extraNames: ["push.herald.test"])
        let double = try await WebPushDouble.start(certificates: certificates)
        let resolver = TestResolver()
        let provider = try WebPushProvider(
            configuration: WebPushConfiguration(
                subject: "mailto:ops@herald.test", vapidPrivateKey: VAPIDKey.generate(),
                allowedHosts: ["push.herald.test", "127.0.0.0/8"], trustedCAPath: double.caPath, requestTimeout: .seconds(600)),
            resolver: resolver)
        let subscription = double.makeSubscription(host: host)
        let result = await provider.send(WebPushHostCapTests.notification(), to: WebPushHostCapTests.device(subscription))
        // Before: the HTTP client looked `Push.Herald.Test` up again (its override was keyed by the lower-cased name)
        // and the system resolver, which does not know it, failed: the connection never went to the vetted address.
        #expect(result == .delivered(providerMessageID: "/message/1"), "\(result)")
        #expect(resolver.asked.withLock { $0 } == ["push.herald.test"])
        #expect(double.delivered.first?.claims["aud"] == .string("https://push.herald.test:\(double.port)"))
        try await provider.shutdown()
        try await double.shutdown()
    }

    @Test(arguments: [
        "https://fcm.googleapis.com:99999/fcm/send/x", "https://fcm.googleapis.com:65536/fcm/send/x",
        "https://fcm.googleapis.com:8443/fcm/send/x", "https://127.0.0.1:70000/push/x", "https://127.0.0.1:0/push/x",
    ])
    func anEndpointTheRulesRefuseFailsItsNotificationBeforeAnythingIsSent(endpoint: String) async throws {
        let resolver = TestResolver()
        let provider = try WebPushProvider(
            configuration: WebPushConfiguration(
                subject: "mailto:ops@herald.test", vapidPrivateKey: VAPIDKey.generate(), allowedHosts: ["127.0.0.0/8"]),
            resolver: resolver)
        let keys = WebPushDecryption.Subscriber()
        let device = Device(
            userIDHash: "u", secretHash: "s", platform: .webpush, environment: .production, token: endpoint, createdAt: Date(),
            updatedAt: Date(), addressData: WebPushKeys(p256dh: keys.p256dh, auth: keys.authText).addressData)
        let result = await provider.send(WebPushHostCapTests.notification(), to: device)
        guard case .failed(let reason) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(reason.contains("port"), "\(reason)")
        #expect(resolver.asked.withLock { $0 }.isEmpty)
        try await provider.shutdown()
    }

    @Test func theHostIsLowerCasedAndNothingElseOfTheURLChanges() throws {
        let endpoint = try #require(URL(string: "https://Updates.Push.Services.Mozilla.COM/wpush/v2/gAAAA_Ab?Token=XyZ"))
        let target = try #require(WebPushExchange.lowercasingHost(endpoint))
        #expect(target.host == "updates.push.services.mozilla.com")
        #expect(target.url.absoluteString == "https://updates.push.services.mozilla.com/wpush/v2/gAAAA_Ab?Token=XyZ")
        let upper = try #require(URL(string: "https://PUSH.example:8443/A"))
        let withPort = try #require(WebPushExchange.lowercasingHost(upper))
        #expect(withPort.url.absoluteString == "https://push.example:8443/A")
    }
}
