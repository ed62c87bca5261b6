import Foundation
import HeraldCore
import HeraldTesting
import HeraldWebPush

/// The contract over the Web Push provider and the push-service double (HTTPS on 127.0.0.1, VAPID checked, the body
/// decrypted with the subscription's key).
struct WebPushContractAdapter: ContractAdapter {
    let double: WebPushDouble
    let provider: WebPushProvider
    let subscription: WebPushDouble.Subscription
    let clock: TestClock

    static func start() async throws -> WebPushContractAdapter {
        let clock = TestClock(Date())
        let double = try await WebPushDouble.start(clock: clock)
        do {
            let configuration = WebPushConfiguration(
                subject: "mailto:ops@herald.test", vapidPrivateKey: VAPIDKey.generate(), allowedHosts: ["127.0.0.1"],
                trustedCAPath: double.caPath, requestTimeout: .seconds(30))
            return WebPushContractAdapter(
                double: double, provider: try WebPushProvider(configuration: configuration, clock: clock),
                subscription: double.makeSubscription(), clock: clock)
        } catch {
            try? await double.shutdown()
            throw error
        }
    }

    func send() async -> DeliveryResult {
        let now = clock.now()
        let payload: JSONObject = ["title": "Door", "body": "Opened"]
        let notification = PushNotification(
            deviceID: UUID(), pushType: .alert, priority: 10, collapseID: nil,
            payload: (try? JSONValue.object(payload).encoded()) ?? Data(), quotaDay: nil, createdAt: now,
            expiresAt: now.addingTimeInterval(600))
        let device = Device(
            userIDHash: "u", secretHash: "s", platform: .webpush, environment: .production, token: subscription.endpoint,
            createdAt: now, updatedAt: now,
            addressData: WebPushKeys(p256dh: subscription.subscriber.p256dh, auth: subscription.subscriber.authText).addressData)
        return await provider.send(notification, to: device)
    }

    func killToken() {
        double.markGone(subscription, status: 410)
    }

    /// `429` with `Retry-After: 7`.
    func refuseNextForAWhile() -> Duration {
        double.failNext(1, .init(status: 429, retryAfter: 7))
        return .seconds(7)
    }

    func refuseNextForGood() {
        double.failNext(1, .init(status: 413, body: "payload too large"))
    }

    /// The push service refuses the VAPID key (`403`): a key the subscription was not made with, nothing to renew.
    func refuseCurrentCredential() {
        double.failNext(1, .init(status: 403, body: "VAPID key mismatch"))
    }

    var renewsRefusedCredential: Bool { false }

    func loseConnections(_ count: Int) {
        double.dropNext(count)
    }

    /// A push service may have taken a message whose answer was lost: it is retried later, not resent at once.
    var resendsAfterLostConnection: Bool { false }

    func requests() -> [ContractRequest] {
        double.requests.map { ContractRequest(credential: $0.authorization, status: $0.status, connection: $0.connectionID) }
    }

    func shutdown() async {
        try? await provider.shutdown()
        try? await double.shutdown()
    }
}
