import AsyncHTTPClient
import Foundation
import HeraldCore
import Synchronization
import HeraldTesting
import Testing

@testable import HeraldWebPush

/// The per-host cap over real sockets: a slow push service gets at most `maximumPerHost` requests at once, and another
/// push service is not held up by it.
@Suite("Web Push per-host cap")
struct WebPushHostCapTests {
    private static func device(_ subscription: WebPushDouble.Subscription) -> Device {
        Device(
            userIDHash: "u", secretHash: "s", platform: .webpush, environment: .production, token: subscription.endpoint,
            createdAt: Date(), updatedAt: Date(),
            webPushKeys: WebPushKeys(p256dh: subscription.subscriber.p256dh, auth: subscription.subscriber.authText))
    }

    private static func notification() -> PushNotification {
        PushNotification(
            deviceID: UUID(), pushType: .alert, priority: 10, collapseID: nil, payload: Data(#"{"title":"T","body":"B"}"#.utf8),
            quotaDay: nil, createdAt: Date(), expiresAt: Date().addingTimeInterval(600))
    }

    @Test func aSlowServiceGetsAtMostItsCapAndAnotherServiceIsNotHeldUp() async throws {
        let slow = try await WebPushDouble.start()
        let fast = try await WebPushDouble.start()
        let configuration = WebPushConfiguration(
            subject: "mailto:ops@herald.test", vapidPrivateKey: VAPIDKey.generate(), allowedHosts: ["127.0.0.1"],
            trustedCAPath: slow.caPath, requestTimeout: .seconds(30), maximumPerHost: 2)
        let provider = try WebPushProvider(configuration: configuration)
        slow.failNext(6, .init(status: 201, delay: .milliseconds(1_500)))
        let slowDevice = Self.device(slow.makeSubscription())
        let fastDevice = Self.device(fast.makeSubscription())

        let started = ContinuousClock.now
        let slowAnswered = AnsweredCount()
        async let slowResults = withTaskGroup(of: DeliveryResult.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    let result = await provider.send(Self.notification(), to: slowDevice)
                    slowAnswered.count.withLock { $0 += 1 }
                    return result
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        try await Task.sleep(for: .milliseconds(200))
        let fastResult = await provider.send(Self.notification(), to: fastDevice)
        let slowAnsweredWhenFastWas = slowAnswered.count.withLock { $0 }
        let results = await slowResults
        let slowElapsed = ContinuousClock.now - started

        #expect(results.allSatisfy { if case .delivered = $0 { true } else { false } }, "\(results)")
        #expect(slow.maximumInFlight <= 2)
        #expect(slow.received.count == 6)
        // Six answers of 1.5 s, two at a time: three rounds.
        #expect(slowElapsed >= .milliseconds(4_400))
        #expect(fastResult == .delivered(providerMessageID: "/message/1"))
        // Behind the slow service's gate it would have waited for the slow sends queued before it.
        #expect(slowAnsweredWhenFastWas < 6, "the fast service waited behind the slow one")
        try await provider.shutdown()
        try await slow.shutdown()
        try await fast.shutdown()
    }
}

/// Slow sends answered so far.
private final class AnsweredCount: Sendable {
    let count = Mutex(0)
}

/// A host's client follows its vetted addresses: kept while its address is still among them, replaced when not.
@Suite("Web Push host clients")
struct WebPushHostClientTests {
    @Test func aHostKeepsItsClientWhileItsAddressIsStillVettedAndGetsANewOneWhenNot() async throws {
        let hosts = WebPushHosts(
            configuration: .init(), eventLoopGroup: HTTPClient.defaultEventLoopGroup, maximumPerHost: 4, retirement: .zero)
        let first = try #require(IPAddressBytes("142.250.185.74"))
        let second = try #require(IPAddressBytes("142.250.185.75"))
        let third = try #require(IPAddressBytes("142.250.185.76"))
        let a = try #require(hosts.client(host: "fcm.googleapis.com:443", name: "fcm.googleapis.com", addresses: [first, second]))
        let b = try #require(hosts.client(host: "fcm.googleapis.com:443", name: "fcm.googleapis.com", addresses: [second, first]))
        #expect(a === b)
        let c = try #require(hosts.client(host: "fcm.googleapis.com:443", name: "fcm.googleapis.com", addresses: [third]))
        #expect(c !== a)
        let other = try #require(hosts.client(host: "web.push.apple.com:443", name: "web.push.apple.com", addresses: [third]))
        #expect(other !== c)
        #expect(hosts.gate(for: "fcm.googleapis.com:443") === hosts.gate(for: "fcm.googleapis.com:443"))
        await hosts.shutdown()
        #expect(hosts.client(host: "fcm.googleapis.com:443", name: "fcm.googleapis.com", addresses: [third]) == nil)
    }
}
