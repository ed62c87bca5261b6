import Foundation
import HTTPTypes
import HeraldCore
import HeraldFCM
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// A TestServer whose FCM endpoint and token endpoint are an FCM double.
struct FCMTestServer {
    /// The service account of every test: the double's and the server's.
    static let account = FCMTestServiceAccount(projectID: "herald-tests")

    var server: TestServer
    let fcm: FCMDouble

    static func start(dailyLimit: Int = 150, clock: TestClock = TestClock(Date())) async throws -> FCMTestServer {
        let fcm = try await FCMDouble.start(projectID: account.projectID, serviceAccount: account, clock: clock)
        var server = try TestServer(dailyLimit: dailyLimit, clock: clock)
        server.configuration.deliveryWait = APNsTestServer.outcomeWait
        server.configuration.fcm = FCMConfiguration(
            serviceAccount: .file(path: try fcm.writeServiceAccount()), baseURL: fcm.baseURL, trustedCAPath: fcm.caPath,
            // Generous: a loaded two-core machine once took over 5 s to connect to the double's token endpoint, and the
            // retry that follows a missing access token came after the test had stopped waiting. No test here times out FCM.
            requestTimeout: .seconds(60))
        return FCMTestServer(server: server, fcm: fcm)
    }

    func shutdown() async throws {
        try await fcm.shutdown()
    }

    /// The message the double accepted for a token, waiting for the delivery engine; `nil` when none arrives.
    func acceptedMessage(to token: String, number: Int = 1) async -> FCMDouble.AcceptedMessage? {
        var found: FCMDouble.AcceptedMessage?
        _ = await eventually {
            let messages = fcm.acceptedMessages.filter { $0.token == token }
            found = messages.count >= number ? messages[number - 1] : nil
            return found != nil
        }
        return found
    }
}

extension Fixtures {
    /// An FCM registration token of the usual shape (instance id, `:`, a long base64url part).
    static func fcmToken(_ seed: Int = 1) -> String {
        "f\(seed)Xk2nGxQ0aWc:APA91bH" + String(repeating: String(format: "%02x", seed % 256), count: 70)
    }
}

extension TestClientProtocol {
    /// Registers an FCM device and returns its credentials.
    func registerFCM(token: String = Fixtures.fcmToken()) async throws -> Registration {
        let response = try await post("/api/push/register", #"{"platform": "fcm", "token": "\#(token)"}"#)
        #expect(response.status == .created)
        let body = try response.json()
        return Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue))
    }
}
