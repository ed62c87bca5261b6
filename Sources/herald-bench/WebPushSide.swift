import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import HeraldWebPush
import NIOCore
import NIOHTTP1

/// The in-process push-service double Herald delivers to in scenario 1's run for Web Push devices (HTTPS on
/// 127.0.0.1, every message's VAPID JWT verified and its body decrypted with the subscription's key, as the tests use
/// it). The subscriptions are made up front, one per device registered.
struct BenchWebPush: BenchProvider {
    static let subject = "mailto:bench@herald.test"

    let double: WebPushDouble
    let subscriptions: [WebPushDouble.Subscription]
    /// The VAPID key Herald is given (so that the baseline signs with the same).
    let vapidKey: String

    static func start(devices: Int) async throws -> BenchWebPush {
        let double = try await WebPushDouble.start()
        let subscriptions = (0..<max(1, devices)).map { _ in double.makeSubscription() }
        return BenchWebPush(double: double, subscriptions: subscriptions, vapidKey: VAPIDKey.generate())
    }

    var name: String { "Web Push" }
    var platform: Platform { .webpush }
    var duplicateMeaning: String { "a 2nd push-service 201 for one notification id" }

    /// The `HERALD_VAPID_*` and `HERALD_WEBPUSH_*` options that point Herald at the double. Every subscription is on
    /// one host, so the per-host cap is raised to Herald's delivery slots: the cap protects other push services, and
    /// here there is none.
    var heraldEnvironment: [String: String] {
        [
            "HERALD_VAPID_SUBJECT": Self.subject, "HERALD_VAPID_PRIVATE_KEY": vapidKey, "HERALD_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "HERALD_WEBPUSH_CA_PATH": double.caPath, "HERALD_WEBPUSH_MAX_PER_HOST": "1000",
        ]
    }

    /// Messages answered `201` so far.
    var delivered: Int { double.deliveredCount }
    var successStatus: Int { 201 }

    /// The registration body's `subscription` of device `index`.
    func subscriptionJSON(_ index: Int) -> String {
        let json = (try? JSONValue.object(subscriptions[index % subscriptions.count].json).encoded()) ?? Data()
        return String(decoding: json, as: UTF8.self)
    }

    func startLedger(store: String) -> any DeliveryLedger { WebPushLedger(self) }
}

/// The double's `201`s matched to Herald's notifications by the `id` inside each decrypted message.
struct WebPushLedger: DeliveryLedger {
    let webPush: BenchWebPush
    private let before: Int

    init(_ webPush: BenchWebPush) {
        self.webPush = webPush
        before = webPush.double.received.count
    }

    func missing(from ids: Set<String>) throws -> Int {
        let answers = webPush.delivered
        guard answers >= ids.count else { return ids.count - answers }
        let delivered = try stop().delivered
        return ids.count { !delivered.contains($0) }
    }

    func stop() throws -> (delivered: Set<String>, answers: Int) {
        let messages = webPush.double.received.dropFirst(before).filter { $0.status == 201 }
        return (Set(messages.compactMap { $0.json["id"]?.stringValue }), messages.count)
    }
}

/// The double's own limit: messages per second it answers `201` from a bare AsyncHTTPClient (no Herald code), each
/// encrypted for its subscription (by Herald's `WebPushEncryption`, before the run) with a VAPID header, with as many
/// requests in flight as Herald has delivery slots.
enum WebPushBaseline {
    static func measure(
        _ webPush: BenchWebPush, inFlight: Int, warmup: Duration, duration: Duration, cpu: CPUWindow
    ) async throws -> (result: ClosedLoopResult, accepted: Int) {
        let signer = VAPIDSigner(key: try VAPIDKey.parse(webPush.vapidKey), subject: BenchWebPush.subject)
        let plaintext = Data(#"{"title":"Person detected","body":"Front Door","id":"baseline"}"#.utf8)
        let requests = try webPush.subscriptions.prefix(64).map { subscription in
            let keys = try WebPushEncryption.SubscriptionKeys(p256dh: subscription.subscriber.p256dh, auth: subscription.subscriber.authText)
            let url = URL(string: subscription.endpoint)!
            return (
                url: subscription.endpoint, authorization: signer.authorization(for: url),
                body: ByteBuffer(bytes: try WebPushEncryption.encrypt(plaintext, for: keys))
            )
        }
        let deliveries = DeliveryWindow(webPush)
        let result = try await DoubleBaseline.withClients(1, trusting: webPush.double.caPath) { clients in
            await DoubleBaseline.run(
                clients, double: webPush.name, inFlight: inFlight, warmup: warmup, duration: duration, observers: [cpu, deliveries]
            ) { index in
                let prepared = requests[index % requests.count]
                var request = HTTPClientRequest(url: prepared.url)
                request.method = .POST
                request.headers.add(name: "authorization", value: prepared.authorization)
                request.headers.add(name: "content-encoding", value: "aes128gcm")
                request.headers.add(name: "ttl", value: "86400")
                request.body = .bytes(prepared.body)
                return request
            }
        }
        return (result, deliveries.delivered)
    }
}
