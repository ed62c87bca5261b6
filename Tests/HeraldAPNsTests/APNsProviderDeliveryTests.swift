import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldTesting
import Testing

@Suite("APNsProvider against the APNs double")
struct APNsProviderDeliveryTests {
    @Test func deliversWithExactHeadersAndPayload() async throws {
        try await APNsHarness.run { harness in
            let device = harness.device()
            let notification = harness.notification(for: device, collapseID: "door-1")
            let result = await harness.provider.send(notification, to: device)
            #expect(result == .delivered(providerMessageID: notification.id.uuidString.lowercased()))

            let pushes = harness.double.acceptedPushes
            try #require(pushes.count == 1)
            let push = pushes[0]
            #expect(push.method == "POST")
            #expect(push.path == "/3/device/\(Fixtures.apnsToken(1))")
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-topic") == APNsHarness.topic)
            #expect(push.header("apns-priority") == "10")
            #expect(push.header("apns-expiration") == String(Int(notification.expiresAt.timeIntervalSince1970)))
            #expect(push.header("apns-collapse-id") == "door-1")
            #expect(push.header("apns-id") == notification.id.uuidString.lowercased())
            #expect(push.body == notification.payload)
            for name in ["authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id"] {
                #expect(push.headerValues(name).count == 1, "\(name)")
            }
            // The provider token was verified by the double and has exactly Apple's fields.
            #expect(push.providerTokenIsValid)
            let token = try #require(push.providerToken)
            #expect(token.header == ["alg": "ES256", "kid": .string(harness.key.keyID)])
            #expect(token.claims == ["iss": .string(harness.key.teamID), "iat": .int(Int(harness.issuerClock.now().timeIntervalSince1970))])
            #expect(push.header("authorization") == "bearer \(token.jwt)")
            #expect(push.responseAPNsID == notification.id.uuidString.lowercased())
            #expect(push.warnings.isEmpty, "\(push.warnings)")  // HPACK as Apple asks, among others
        }
    }

    /// A collapse id the HTTP/2 layer refuses to send (stored before the API refused such values) fails at once and
    /// for good: every attempt would be refused the same way. Before, it was retried until it expired (and each
    /// attempt left a stream behind on the connection, MaxStreamsViolation for the next notification).
    @Test(arguments: ["door\r\nforged: 1", "door\n1", "door\u{0}1"])
    func headerTheHTTP2LayerRefusesIsAPermanentFailure(_ collapseID: String) async throws {
        try await APNsHarness.run { harness in
            let device = harness.device()
            let result = await harness.provider.send(harness.notification(for: device, collapseID: collapseID), to: device)
            guard case .failed(let reason) = result else {
                Issue.record("expected a permanent failure, got \(result)")
                return
            }
            #expect(reason.contains("HTTP/2 refuses"), "\(reason)")
            #expect(harness.double.acceptedPushes.isEmpty)
            // The connection is still good for the next notification.
            let next = await harness.send()
            #expect(next == .delivered(providerMessageID: harness.double.acceptedPushes.first?.header("apns-id")), "\(next)")
        }
    }

    @Test func noCollapseHeaderWithoutCollapseID() async throws {
        try await APNsHarness.run { harness in
            #expect(await harness.send() == .delivered(providerMessageID: harness.double.requests.first?.header("apns-id")))
            #expect(harness.double.requests.first?.header("apns-collapse-id") == nil)
        }
    }

    @Test func sandboxDevicesGoToTheSandboxURL() async throws {
        try await APNsHarness.run(environment: .sandbox, configure: { $0.productionURL = "https://127.0.0.1:1" }) { harness in
            let result = await harness.send()
            guard case .delivered = result else {
                Issue.record("expected delivery, got \(result)")
                return
            }
            #expect(harness.double.acceptedPushes.count == 1)
        }
    }

    @Test func unregisteredTokenIsDead() async throws {
        try await APNsHarness.run { harness in
            let since = harness.doubleClock.now().addingTimeInterval(-86_400)
            harness.double.markUnregistered(Fixtures.apnsToken(1), since: since)
            #expect(await harness.send() == .deadToken(reason: "Unregistered"))
            let record = try #require(harness.double.requests.last)
            #expect(record.outcome == .answered(status: 410, reason: "Unregistered"))
        }
    }

    @Test func badDeviceTokenIsDead() async throws {
        try await APNsHarness.run { harness in
            harness.double.markBadDeviceToken(Fixtures.apnsToken(1))
            #expect(await harness.send() == .deadToken(reason: "BadDeviceToken"))
        }
    }

    @Test func tooLargePayloadFails() async throws {
        try await APNsHarness.run { harness in
            let device = harness.device()
            let big = try JSONValue.object(["aps": ["alert": .string(String(repeating: "x", count: 5_000))]]).encoded()
            let result = await harness.provider.send(harness.notification(for: device, payload: big), to: device)
            #expect(result == .failed(reason: "PayloadTooLarge"))
            #expect(harness.double.requests.last?.outcome == .answered(status: 413, reason: "PayloadTooLarge"))
        }
    }

    @Test(
        arguments: [
            (429, "TooManyRequests", DeliveryResult.retry(reason: "TooManyRequests", after: .seconds(60))),
            (500, "InternalServerError", .retry(reason: "InternalServerError", after: nil)),
            (503, "ServiceUnavailable", .retry(reason: "ServiceUnavailable", after: nil)),
            (403, "Forbidden", .failed(reason: "Forbidden")),
            (410, "ExpiredToken", .deadToken(reason: "ExpiredToken")),
            (400, "DeviceTokenNotForTopic", .deadToken(reason: "DeviceTokenNotForTopic")),
        ])
    func injectedAnswersAreClassified(status: Int, reason: String, expected: DeliveryResult) async throws {
        try await APNsHarness.run { harness in
            harness.double.failNext(status: status, reason: reason)
            #expect(await harness.send() == expected)
            #expect(harness.double.requests.count == 1)
            // The fault is used up: the next push goes through.
            guard case .delivered = await harness.send() else {
                Issue.record("the next push was not delivered")
                return
            }
        }
    }

    @Test func stalledRequestTimesOutAsRetry() async throws {
        // The deadline covers connecting too; 2 s leaves room for a TLS handshake on a loaded 2-core machine.
        try await APNsHarness.run(configure: { $0.requestTimeout = .seconds(2) }) { harness in
            // Connect first, so that the deadline is spent on the stalled stream and not on the TLS handshake
            // (which can take longer than the short deadline on a loaded machine).
            try #require(await eventually(attempts: 20) { await harness.send(1).isDelivered })
            harness.double.resetLog()
            harness.double.stallNext()
            let result = await harness.send(2)
            guard case .retry(let reason, nil) = result else {
                Issue.record("expected a retry, got \(result)")
                return
            }
            #expect(reason.contains("no answer within 2 s"))
            #expect(harness.double.requests.map(\.outcome) == [.stalled])
        }
    }

    @Test func droppedConnectionIsResentOnceOnAFreshConnection() async throws {
        try await APNsHarness.run { harness in
            try #require((await harness.send(1)).isDelivered)
            harness.double.dropConnectionOnNextRequest()
            let result = await harness.send(2)
            try #require(result.isDelivered, "\(result)")
            let requests = harness.double.requests
            try #require(requests.count == 3)
            #expect(requests[1].outcome == .droppedConnection)
            #expect(requests[2].status == 200)
            #expect(requests[1].connectionID == requests[0].connectionID)
            #expect(requests[2].connectionID != requests[1].connectionID)
            #expect(requests[2].header("apns-id") == requests[1].header("apns-id"))
        }
    }

    @Test func goAwayIsResentOnceOnAFreshConnection() async throws {
        try await APNsHarness.run { harness in
            harness.double.sendGoAwayOnNextRequest(reason: "Shutdown")
            let result = await harness.send()
            try #require(result.isDelivered, "\(result)")
            let requests = harness.double.requests
            try #require(requests.count == 2)
            #expect(requests[0].outcome == .goAway(reason: "Shutdown"))
            #expect(requests[1].status == 200)
            #expect(requests[1].connectionID != requests[0].connectionID)
            #expect(
                harness.double.connectionEvents.contains {
                    $0.connectionID == requests[0].connectionID && $0.kind == .goAwaySent(lastStreamID: 0, reason: "Shutdown")
                })
        }
    }

    @Test func secondConnectionLossIsARetry() async throws {
        try await APNsHarness.run { harness in
            harness.double.inject(.dropConnection, count: 2)
            let result = await harness.send()
            #expect(result.isRetry, "\(result)")
            #expect(harness.double.requests.map(\.outcome) == [.droppedConnection, .droppedConnection])
        }
    }

    @Test func expiredProviderTokenIsRenewedOnceAndResent() async throws {
        try await APNsHarness.run(sharedClock: false) { harness in
            try #require((await harness.send()).isDelivered)
            // The double's clock runs ahead: it sees the cached token as over an hour old.
            harness.issuerClock.advance(by: 21 * 60)
            harness.doubleClock.advance(by: 61 * 60)
            try #require((await harness.send()).isDelivered)
            let requests = harness.double.requests
            try #require(requests.count == 3)
            #expect(requests[1].outcome == .answered(status: 403, reason: "ExpiredProviderToken"))
            #expect(requests[1].providerToken?.jwt == requests[0].providerToken?.jwt)
            #expect(requests[2].status == 200)
            #expect(requests[2].providerToken?.jwt != requests[1].providerToken?.jwt)
            #expect(requests[2].providerToken?.issuedAt == (requests[0].providerToken?.issuedAt ?? 0) + 21 * 60)
        }
    }

    @Test func stillExpiredAfterRenewalIsARetryAndRenewsOnlyOnce() async throws {
        try await APNsHarness.run(sharedClock: false) { harness in
            harness.doubleClock.advance(by: 2 * 3_600)
            #expect(await harness.send() == .retry(reason: "ExpiredProviderToken", after: nil))
            #expect(harness.double.requests.count == 2)
            // The renewed token is not renewed early again.
            #expect(await harness.send() == .retry(reason: "ExpiredProviderToken", after: nil))
            let requests = harness.double.requests
            #expect(requests.count == 3)
            #expect(requests[2].providerToken?.jwt == requests[1].providerToken?.jwt)
        }
    }

    @Test func tooManyProviderTokenUpdatesKeepsTheTokenAndReplacesTheConnection() async throws {
        try await APNsHarness.run { harness in
            harness.double.failNext(status: 429, reason: "TooManyProviderTokenUpdates")
            #expect(await harness.send() == .retry(reason: "TooManyProviderTokenUpdates", after: nil))
            try #require((await harness.send()).isDelivered)
            let requests = harness.double.requests
            try #require(requests.count == 2)
            #expect(requests[1].connectionID != requests[0].connectionID)
            #expect(requests[1].providerToken?.jwt == requests[0].providerToken?.jwt)
        }
    }

    @Test func providerTokenIsReusedAndRenewedAfterFiftyMinutes() async throws {
        try await APNsHarness.run { harness in
            for minute in [0, 10, 30, 49] {
                harness.issuerClock.set(Date(timeIntervalSince1970: 1_763_769_600 + Double(minute * 60)))
                try #require((await harness.send(minute + 1)).isDelivered)
            }
            harness.issuerClock.set(Date(timeIntervalSince1970: 1_763_769_600 + 51 * 60))
            try #require((await harness.send(99)).isDelivered)
            let tokens = harness.double.requests.compactMap { $0.providerToken?.jwt }
            #expect(tokens.count == 5)
            #expect(Set(tokens.prefix(4)).count == 1)
            #expect(tokens[4] != tokens[0])
            #expect(harness.double.requests.last?.providerToken?.issuedAt == 1_763_769_600 + 51 * 60)
        }
    }

    @Test func providerTokenIsNeverRenewedWithinTwentyMinutes() async throws {
        try await APNsHarness.run(configure: { $0.tokenRefreshInterval = .seconds(5 * 60) }) { harness in
            for minute in [0, 6, 19, 21] {
                harness.issuerClock.set(Date(timeIntervalSince1970: 1_763_769_600 + Double(minute * 60)))
                try #require((await harness.send(minute + 1)).isDelivered)
            }
            let tokens = harness.double.requests.compactMap { $0.providerToken?.jwt }
            #expect(Set(tokens.prefix(3)).count == 1)
            #expect(tokens[3] != tokens[0])
        }
    }

    @Test func manyConcurrentSendsThroughOneStreamAtFirst() async throws {
        try await APNsHarness.run { harness in
            harness.double.setResponseDelay(.milliseconds(20))
            let count = 64
            let results = await withTaskGroup(of: DeliveryResult.self) { group in
                for seed in 1...count { group.addTask { await harness.send(seed) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == count)
            #expect(results.allSatisfy { if case .delivered = $0 { true } else { false } })
            let requests = harness.double.requests
            #expect(requests.count == count)
            #expect(Set(requests.map(\.connectionID)).count == 1)
            #expect(requests.first?.openStreams == 1)
            #expect((requests.map(\.openStreams).max() ?? 0) > 1)
            let settings = harness.double.connectionEvents.compactMap { event -> Int? in
                if case .settingsSent(let value) = event.kind { value } else { nil }
            }
            #expect(settings == [1, 1_000])
        }
    }

    /// The client matches answers to requests by stream id on one connection: each of 255 concurrent sends (one per
    /// distinct fixture token, two thirds of them unregistered) gets its own verdict.
    @Test func concurrentAnswersOnOneConnectionEachReachTheirOwnRequest() async throws {
        try await APNsHarness.run { harness in
            let seeds = 1...255
            let isDead = { (seed: Int) in !seed.isMultiple(of: 3) }
            for seed in seeds where isDead(seed) { harness.double.markUnregistered(Fixtures.apnsToken(seed)) }
            harness.double.setResponseDelay(.milliseconds(5))  // so that many are open at once
            let results = await withTaskGroup(of: (Int, DeliveryResult).self) { group in
                for seed in seeds { group.addTask { (seed, await harness.send(seed)) } }
                return await group.reduce(into: [Int: DeliveryResult]()) { $0[$1.0] = $1.1 }
            }
            let wrong = seeds.filter { seed in
                isDead(seed) ? results[seed] != .deadToken(reason: "Unregistered") : results[seed]?.isDelivered != true
            }
            #expect(wrong.count == 0, "sends that got another request's verdict or none, e.g. \(wrong.prefix(3))")
            let requests = harness.double.requests
            #expect(requests.count == seeds.count)
            #expect(Set(requests.map(\.connectionID)).count == 1)
            #expect((requests.map(\.openStreams).max() ?? 0) > 1)
        }
    }

    /// Answer bodies count against HTTP/2's connection window (65,535 bytes until the client returns it): eight answers
    /// of 20 KB each on one connection come through only if the client sends WINDOW_UPDATE as bodies arrive; otherwise
    /// the double has to stop sending after the third and the later requests time out.
    @Test func answerBodiesBeyondTheConnectionWindowKeepComing() async throws {
        try await APNsHarness.run(configure: { $0.requestTimeout = .seconds(5) }) { harness in
            let reason = String(repeating: "x", count: 20_000)
            harness.double.inject(.respond(status: 400, reason: reason), count: 8)
            for seed in 1...8 {
                let result = await harness.send(seed)
                #expect(result == .failed(reason: reason), "send \(seed): \(String(describing: result).prefix(80))")
            }
            #expect(await harness.send(9).isDelivered)
            #expect(Set(harness.double.requests.map(\.connectionID)).count == 1)
        }
    }

    @Test func connectionsAreSpreadOverTheConfiguredClients() async throws {
        try await APNsHarness.run(configure: { $0.connectionsPerEnvironment = 3 }) { harness in
            for seed in 1...6 {
                try #require((await harness.send(seed)).isDelivered)
            }
            #expect(Set(harness.double.requests.map(\.connectionID)).count == 3)
        }
    }

    @Test func shutDownProviderAnswersRetry() async throws {
        try await APNsHarness.run { harness in
            try await harness.provider.shutdown()
            #expect(await harness.send() == .retry(reason: "APNs provider is shut down", after: nil))
        }
    }
}
