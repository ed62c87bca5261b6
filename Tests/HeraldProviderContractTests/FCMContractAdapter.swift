import Foundation
import HeraldCore
import HeraldFCM
import HeraldTesting

/// The contract over the FCM provider and the FCM double (HTTP/2, TLS, OAuth access tokens from RS256 assertions).
struct FCMContractAdapter: ContractAdapter {
    static let account = FCMTestServiceAccount()
    static let token = "fcm-token-1:APA91bHPRgkFLJu6zH6p8v0rNqLuKm3X"

    let double: FCMDouble
    let provider: FCMProvider
    let clock: TestClock

    static func start() async throws -> FCMContractAdapter {
        let clock = TestClock(Date())
        let double = try await FCMDouble.start(projectID: account.projectID, serviceAccount: account, clock: clock)
        do {
            let configuration = FCMConfiguration(
                serviceAccount: .file(path: try double.writeServiceAccount()), baseURL: double.baseURL,
                trustedCAPath: double.caPath, requestTimeout: .seconds(30), connections: 1)
            return FCMContractAdapter(double: double, provider: try FCMProvider(configuration: configuration, clock: clock), clock: clock)
        } catch {
            try? await double.shutdown()
            throw error
        }
    }

    func send() async -> DeliveryResult {
        let now = clock.now()
        let message: JSONObject = ["notification": ["title": "Door", "body": "Opened"]]
        let notification = PushNotification(
            deviceID: UUID(), pushType: .alert, priority: 10, collapseID: nil,
            payload: (try? JSONValue.object(message).encoded()) ?? Data(), quotaDay: nil, createdAt: now,
            expiresAt: now.addingTimeInterval(600))
        let device = Device(
            userIDHash: "u", secretHash: "s", platform: .fcm, environment: .production, token: Self.token, createdAt: now,
            updatedAt: now)
        return await provider.send(notification, to: device)
    }

    func killToken() {
        double.markUnregistered(Self.token)
    }

    /// `UNAVAILABLE` with `Retry-After: 7`.
    func refuseNextForAWhile() -> Duration {
        double.failNext(.unavailable, retryAfter: 7)
        return .seconds(7)
    }

    func refuseNextForGood() {
        double.failNext(.thirdPartyAuthError)
    }

    /// Google revokes the access token: the next send is answered `401`.
    func refuseCurrentCredential() {
        double.revokeAccessTokens()
    }

    func loseConnections(_ count: Int) {
        for _ in 0..<count { double.dropConnectionOnNextRequest() }
    }

    var resendsAfterLostConnection: Bool { false }

    func requests() -> [ContractRequest] {
        double.requests.map { ContractRequest(credential: $0.accessToken, status: $0.status, connection: $0.connectionID) }
    }

    func shutdown() async {
        try? await provider.shutdown()
        try? await double.shutdown()
    }
}
