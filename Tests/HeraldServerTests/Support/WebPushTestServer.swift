import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HeraldWebPush
import HummingbirdTesting
import Testing

/// A TestServer whose Web Push devices' endpoints are a push-service double on 127.0.0.1, which the server may reach
/// because `HERALD_WEBPUSH_ALLOWED_HOSTS` lists 127.0.0.1 (and, for name resolution, `localhost`).
struct WebPushTestServer {
    static let subject = "mailto:ops@herald.test"

    var server: TestServer
    let double: WebPushDouble

    /// - Parameter allowedHosts: `HERALD_WEBPUSH_ALLOWED_HOSTS`; by default the loopback network.
    static func start(
        allowedHosts: [String] = ["127.0.0.0/8"], clock: TestClock = TestClock(Date()), maximumPerHost: Int = 16
    ) async throws -> WebPushTestServer {
        let double = try await WebPushDouble.start(clock: clock)
        var server = try TestServer(clock: clock)
        server.configuration.deliveryWait = APNsTestServer.outcomeWait
        server.configuration.webPush = WebPushConfiguration(
            subject: subject, allowedHosts: allowedHosts, trustedCAPath: double.caPath, requestTimeout: .seconds(5),
            maximumPerHost: maximumPerHost)
        return WebPushTestServer(server: server, double: double)
    }

    func shutdown() async throws {
        try await double.shutdown()
    }

    /// The `number`th message the double received for a subscription, waiting for the delivery engine.
    func received(for subscription: WebPushDouble.Subscription, number: Int = 1) async -> WebPushDouble.ReceivedMessage? {
        var found: WebPushDouble.ReceivedMessage?
        _ = await eventually {
            let messages = double.received.filter { $0.subscriptionID == subscription.id }
            found = messages.count >= number ? messages[number - 1] : nil
            return found != nil
        }
        return found
    }
}

extension TestClientProtocol {
    /// Registers a Web Push device with `subscription` and returns its credentials.
    func registerWebPush(_ subscription: WebPushDouble.Subscription, headers: HTTPFields = [:]) async throws -> Registration {
        let response = try await post("/api/push/register", webPushRegistrationBody(subscription.json), headers: headers)
        #expect(response.status == .created || response.status == .ok)
        let body = try response.json()
        return Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue))
    }
}

/// `{"platform": "webpush", "subscription": …}`.
func webPushRegistrationBody(_ subscription: JSONObject) -> String {
    let json = (try? JSONValue.object(["platform": "webpush", "subscription": .object(subscription)]).encoded()) ?? Data()
    return String(decoding: json, as: UTF8.self)
}
