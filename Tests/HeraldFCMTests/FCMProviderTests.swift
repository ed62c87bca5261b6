import Crypto
import Foundation
import HeraldCore
import HeraldFCM
import HeraldProviderKit
import HeraldTesting
import Testing

/// The FCM provider against the FCM double over HTTP/2 + TLS: the OAuth token exchange and its renewal, and the
/// classification of every FCM answer.
@Suite("FCM provider")
struct FCMProviderTests {
    /// The suite's service account: the double's and the provider's.
    static let account = FCMTestServiceAccount()

    struct Fixture {
        let double: FCMDouble
        let provider: FCMProvider
        let clock: TestClock

        static func start(
            accessTokenLifetime: TimeInterval = 3_600, timeout: Duration = .seconds(30), connections: Int = 1
        ) async throws -> Fixture {
            let clock = TestClock(Date())
            let double = try await FCMDouble.start(
                projectID: FCMProviderTests.account.projectID, serviceAccount: FCMProviderTests.account, clock: clock,
                accessTokenLifetime: accessTokenLifetime)
            let configuration = FCMConfiguration(
                serviceAccount: .file(path: try double.writeServiceAccount()), baseURL: double.baseURL,
                trustedCAPath: double.caPath, requestTimeout: timeout, connections: connections)
            return Fixture(double: double, provider: try FCMProvider(configuration: configuration, clock: clock), clock: clock)
        }

        func send(_ message: JSONObject = Fixture.message, to token: String = Fixture.token) async -> DeliveryResult {
            let now = clock.now()
            let notification = PushNotification(
                deviceID: UUID(), pushType: .alert, priority: 10, collapseID: nil,
                payload: (try? JSONValue.object(message).encoded()) ?? Data(), quotaDay: nil, createdAt: now,
                expiresAt: now.addingTimeInterval(600))
            let device = Device(
                userIDHash: "u", secretHash: "s", platform: .fcm, environment: .production, token: token, createdAt: now, updatedAt: now)
            return await provider.send(notification, to: device)
        }

        func shutdown() async throws {
            try await provider.shutdown()
            try await double.shutdown()
        }

        /// A fixture shut down however `body` ends: a failed `#require` or an early return that skipped the
        /// shutdown left the provider's HTTP client to its deinit, which traps (AsyncHTTPClient), and ended the whole
        /// test process under load.
        static func with(
            accessTokenLifetime: TimeInterval = 3_600, timeout: Duration = .seconds(30), connections: Int = 1,
            _ body: (Fixture) async throws -> Void
        ) async throws {
            let fixture = try await start(accessTokenLifetime: accessTokenLifetime, timeout: timeout, connections: connections)
            do {
                try await body(fixture)
            } catch {
                try? await fixture.shutdown()
                throw error
            }
            try await fixture.shutdown()
        }

        static let token = "fcm-token-1:APA91bHPRgkFLJu6zH6p8v0rNqLuKm3X"
        static let message: JSONObject = ["notification": ["title": "Door", "body": "Opened"], "data": ["kind": "door"]]
    }

    @Test func theFirstSendObtainsAnAccessTokenWithAValidAssertionAndLaterSendsReuseIt() async throws {
        try await Fixture.with() { fixture in
            let first = await fixture.send()
            guard case .delivered(let name?) = first else { Issue.record("got \(first)"); return }
            #expect(name.hasPrefix("projects/\(Self.account.projectID)/messages/"))
            #expect(await fixture.send() == .delivered(providerMessageID: fixture.double.acceptedMessages.last?.name))
            #expect(fixture.double.tokenRequests.count == 1)
            #expect(fixture.double.tokenRequests.allSatisfy { $0.accessToken != nil })

            let sent = try #require(fixture.double.acceptedMessages.first)
            #expect(sent.token == Fixture.token)
            #expect(sent.message["notification"] == ["title": "Door", "body": "Opened"])
            #expect(sent.message["data"] == ["kind": "door"])
            // The provider adds the time left until expiry as android.ttl.
            #expect(sent.message["android"]?.objectValue?["ttl"] == "600s")
        }
    }

    @Test func theAccessTokenIsRenewedFiveMinutesBeforeItExpires() async throws {
        try await Fixture.with(accessTokenLifetime: 1_800) { fixture in
            #expect(await fixture.send().isDelivered)
            fixture.clock.advance(by: 1_800 - 301)  // 301 s left: still used
            #expect(await fixture.send().isDelivered)
            #expect(fixture.double.tokenRequests.count == 1)
            fixture.clock.advance(by: 2)  // 299 s left: renewed before the send
            #expect(await fixture.send().isDelivered)
            #expect(fixture.double.tokenRequests.count == 2)
            let tokens = fixture.double.acceptedMessages.map(\.accessToken)
            #expect(tokens[0] == tokens[1])
            #expect(tokens[1] != tokens[2])
            #expect(fixture.double.requests.allSatisfy { $0.status == 200 })
        }
    }

    @Test func aSendAnswered401RenewsTheTokenOnceAndIsSentAgain() async throws {
        try await Fixture.with() { fixture in
            #expect(await fixture.send().isDelivered)
            fixture.double.revokeAccessTokens()
            #expect(await fixture.send().isDelivered)
            #expect(fixture.double.tokenRequests.count == 2)
            #expect(fixture.double.requests.map(\.status) == [200, 401, 200])
            #expect(fixture.double.acceptedMessages.count == 2)
        }
    }

    @Test func deadTokensAreClassifiedByErrorCode() async throws {
        try await Fixture.with() { fixture in
            fixture.double.markUnregistered("gone:1")
            fixture.double.markSenderMismatch("other-project:1")
            fixture.double.markInvalid("not-a-token:1")
            #expect(await fixture.send(to: "gone:1") == .deadToken(reason: "UNREGISTERED: Requested entity was not found."))
            guard case .deadToken(let mismatch) = await fixture.send(to: "other-project:1") else { Issue.record("not dead"); return }
            #expect(mismatch.hasPrefix("SENDER_ID_MISMATCH"))
            guard case .deadToken(let invalid) = await fixture.send(to: "not-a-token:1") else { Issue.record("not dead"); return }
            #expect(invalid.hasPrefix("INVALID_ARGUMENT"))
            #expect(fixture.double.acceptedMessages.isEmpty)
        }
    }

    @Test func transientErrorsAreRetriedHonouringRetryAfter() async throws {
        try await Fixture.with() { fixture in
            fixture.double.failNext(1, .unavailable, retryAfter: 7)
            #expect(await fixture.send().retryAfter == .seconds(7))
            fixture.double.failNext(1, .internal)
            guard case .retry(let reason, nil) = await fixture.send() else { Issue.record("not a retry"); return }
            #expect(reason.hasPrefix("INTERNAL"))
            // QUOTA_EXCEEDED: Google asks for at least a minute, more when Retry-After says so.
            fixture.double.failNext(1, .quotaExceeded)
            #expect(await fixture.send().retryAfter == .seconds(60))
            fixture.double.failNext(1, .quotaExceeded, retryAfter: 120)
            #expect(await fixture.send().retryAfter == .seconds(120))
            #expect(fixture.double.acceptedMessages.isEmpty)
            #expect(await fixture.send().isDelivered)
        }
    }

    @Test func permanentErrorsFailWithTheReasonRecorded() async throws {
        try await Fixture.with() { fixture in
            fixture.double.failNext(1, .thirdPartyAuthError)
            guard case .failed(let auth) = await fixture.send() else { Issue.record("not failed"); return }
            #expect(auth.hasPrefix("THIRD_PARTY_AUTH_ERROR"))
            // A reserved data key: INVALID_ARGUMENT that does not name the token is not a dead token.
            guard case .failed(let invalid) = await fixture.send(["data": ["from": "me"]]) else { Issue.record("not failed"); return }
            #expect(invalid.hasPrefix("INVALID_ARGUMENT"))
        }
    }

    @Test func aDroppedConnectionIsARetryAndTheNextSendGoesOutOnANewOne() async throws {
        try await Fixture.with() { fixture in
            #expect(await fixture.send().isDelivered)  // the access token and the connection exist before the fault
            fixture.double.dropConnectionOnNextRequest()
            let dropped = await fixture.send()
            #expect(dropped.isRetry, "\(dropped)")
            let next = await fixture.send()
            #expect(next.isDelivered, "\(next)")
            #expect(fixture.double.acceptedMessages.count == 2)
            #expect(fixture.double.counters.connections >= 2)
        }
    }

    @Test func sendsAreSpreadOverTheConfiguredConnections() async throws {
        try await Fixture.with(connections: 3) { fixture in
            let results = await withTaskGroup(of: DeliveryResult.self) { group in
                for _ in 0..<30 { group.addTask { await fixture.send() } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.isDelivered).count == 30)
            #expect(fixture.double.counters.connections == 3)
            #expect(Set(fixture.double.acceptedMessages.map(\.connectionID)).count == 3)
            #expect(fixture.double.tokenRequests.count == 1)  // one access token for every connection
        }
    }

    @Test func aStalledRequestTimesOutAsARetry() async throws {
        // Every request has 2 s, the token exchange and a new connection's TLS handshake too. When the run starts,
        // every test starts at once on two cores, and those can take longer: the sends around the stalled one are
        // tried again (as the delivery engine would), only the stalled one must be a retry for its deadline.
        try await Fixture.with(timeout: .seconds(2)) { fixture in
            #expect(await eventually(attempts: 10) { await fixture.send().isDelivered })
            fixture.double.stallNext()
            guard case .retry(let reason, nil) = await fixture.send() else { Issue.record("not a retry"); return }
            #expect(reason.contains("no answer from FCM within 2 s"))
            #expect(await eventually(attempts: 10) { await fixture.send().isDelivered })
        }
    }

    @Test func aRefusedTokenExchangeIsRetriedNotLost() async throws {
        try await Fixture.with() { fixture in
            fixture.double.failNextTokenRequests(1, status: 500)
            #expect(await fixture.send().isRetry)
            #expect(fixture.double.requests.isEmpty)
            #expect(await fixture.send().isDelivered)
        }
    }

    // MARK: Configuration

    @Test func aMissingOrBadServiceAccountStopsStartupWithOneLine() throws {
        let missing = FCMConfiguration(serviceAccount: .file(path: "/nonexistent/sa.json"))
        #expect(throws: FCMConfigurationError(.serviceAccountPath, "cannot read /nonexistent/sa.json: No such file")) {
            try FCMProvider(configuration: missing)
        }
        // A P-256 key where the RSA key belongs.
        let ecKey = P256.Signing.PrivateKey().pemRepresentation
        let json = try JSONValue.object([
            "type": "service_account", "project_id": "p1", "client_email": "a@p1.iam.gserviceaccount.com",
            "private_key": .string(ecKey), "token_uri": "https://oauth2.googleapis.com/token",
        ]).encoded()
        #expect(throws: FCMConfigurationError(.serviceAccountJSON, "the value: private_key is not an RSA private key of at least 2048 bits in PEM")) {
            try FCMProvider(configuration: FCMConfiguration(serviceAccount: .json(String(decoding: json, as: UTF8.self))))
        }
        #expect(throws: FCMConfigurationError(.serviceAccountJSON, "the value: is not a service-account JSON file (expected an object with project_id, client_email, private_key and token_uri)")) {
            try FCMProvider(configuration: FCMConfiguration(serviceAccount: .json("not json")))
        }
    }

    @Test func checkDescribesTheServiceAccountWithoutItsKey() throws {
        let json = Self.account.json(tokenURI: "https://oauth2.googleapis.com/token")
        let lines = try FCMConfiguration(serviceAccount: .json(json)).check()
        #expect(lines.contains("project: \(Self.account.projectID)"))
        #expect(lines.contains("client email: \(Self.account.clientEmail)"))
        #expect(lines.contains("send endpoint: https://fcm.googleapis.com/v1/projects/\(Self.account.projectID)/messages:send (HTTP/2)"))
        #expect(lines.contains { $0.hasPrefix("key: RS256 RSA 2048-bit private key") })
        #expect(!lines.joined().contains("PRIVATE KEY"))
    }
}

extension DeliveryResult {
    var isDelivered: Bool { if case .delivered = self { true } else { false } }
    var isRetry: Bool { if case .retry = self { true } else { false } }
    var retryAfter: Duration? { if case .retry(_, let after) = self { after } else { nil } }
}
