import Foundation
import HeraldCore
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
        slow.failNext(6, .init(status: 201, delay: .milliseconds(600)))
        let slowDevice = Self.device(slow.makeSubscription())
        let fastDevice = Self.device(fast.makeSubscription())

        let started = ContinuousClock.now
        async let slowResults = withTaskGroup(of: DeliveryResult.self) { group in
            for _ in 0..<6 { group.addTask { await provider.send(Self.notification(), to: slowDevice) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        try await Task.sleep(for: .milliseconds(200))
        let fastResult = await provider.send(Self.notification(), to: fastDevice)
        let fastElapsed = ContinuousClock.now - started
        let results = await slowResults
        let slowElapsed = ContinuousClock.now - started

        #expect(results.allSatisfy { if case .delivered = $0 { true } else { false } }, "\(results)")
        #expect(slow.maximumInFlight <= 2)
        #expect(slow.received.count == 6)
        // Six answers of 600 ms, two at a time: three rounds.
        #expect(slowElapsed >= .milliseconds(1_700))
        #expect(fastResult == .delivered(providerMessageID: "/message/1"))
        #expect(fastElapsed < .milliseconds(1_200), "the fast service waited behind the slow one: \(fastElapsed)")
        try await provider.shutdown()
        try await slow.shutdown()
        try await fast.shutdown()
    }
}
