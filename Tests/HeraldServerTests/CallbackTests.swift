import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 39, section 4: signed callbacks over real HTTPS to a receiver double that checks the signature itself.
@Suite("Signed callbacks")
struct CallbackTests {
    @Test func aCallbackIsPostedSignedWithTheSendingTokensSecretAndRetriedOnTheScheduleUntil2xx() async throws {
        let setup = try await CallbackTestServer.start()
        setup.receiver.failNext(2, .init(status: 500))
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            setup.receiver.secret = CallbackSigning.displayed(CallbackSigning.secret(tokenText: token.token))
            let callback = try await setup.enqueue(to: setup.receiver.url(), token: token, owner: owner)
            #expect(await setup.eventuallyReceived(1))
            #expect(try await setup.eventuallyStored(callback.id) { $0.attempts == 1 })
            // Not before its time on the clock: 30 s, then 2 min.
            setup.clock.advance(by: 29)
            setup.clock.advance(by: 1)
            #expect(await setup.eventuallyReceived(2))
            #expect(try await setup.eventuallyStored(callback.id) { $0.attempts == 2 })
            let next = try #require(try await setup.stored(callback.id)?.nextAttemptAt)
            #expect(abs(next.timeIntervalSince(setup.clock.now().addingTimeInterval(120))) < 0.001)
            setup.clock.advance(by: 120)
            #expect(try await setup.eventuallyStored(callback.id) { $0.status == .delivered })
            let stored = try #require(try await setup.stored(callback.id))
            #expect(stored.attempts == 3 && stored.nextAttemptAt == nil)
            let received = setup.receiver.received
            #expect(received.count == 3)
            #expect(received.allSatisfy { $0.signatureValid })
            #expect(Set(received.map { $0.headers["webhook-id"] }) == [callback.webhookID])
            #expect(received.map(\.status) == [500, 500, 204])
            #expect(received.allSatisfy { $0.headers["content-type"] == "application/json" && $0.body == callback.body })
            #expect(received.first?.json["type"] == "notification.acknowledged")
            #expect(received.first?.json["data"] == ["id": "r1"])
            // Each attempt signs with its own time.
            let times = received.compactMap { $0.headers["webhook-timestamp"].flatMap { Int64($0) } }
            #expect(times.count == 3 && times[1] - times[0] == 30 && times[2] - times[1] == 120)
        }
        try await setup.shutdown()
    }

    @Test func a410StopsTheCallbackAndAnAnswerWithoutTheRightSecretIsNotValid() async throws {
        let setup = try await CallbackTestServer.start()
        setup.receiver.failNext(1, .init(status: 410))
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let other = try await client.createToken(for: owner, name: "other")
            setup.receiver.secret = CallbackSigning.displayed(CallbackSigning.secret(tokenText: other.token))
            let callback = try await setup.enqueue(to: setup.receiver.url(), token: token, owner: owner)
            #expect(try await setup.eventuallyStored(callback.id) { $0.status == .gone })
            setup.clock.advance(by: 7_200)
            try await Task.sleep(for: .milliseconds(200))
            #expect(setup.receiver.received.count == 1)
            // Signed with the sending token's secret, not another token's.
            #expect(setup.receiver.received.first?.signatureValid == false)
        }
        try await setup.shutdown()
    }

    @Test func aReceiverThatNeverSucceedsIsGivenUpAfterSevenAttemptsInAboutAnHour() async throws {
        let setup = try await CallbackTestServer.start()
        setup.receiver.answer("/down", with: .init(status: 503))
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let callback = try await setup.enqueue(to: setup.receiver.url("/down"), token: token, owner: owner)
            for (attempt, delay) in [30.0, 120, 300, 600, 900, 1_800].enumerated() {
                #expect(try await setup.eventuallyStored(callback.id) { $0.attempts == attempt + 1 })
                setup.clock.advance(by: delay)
            }
            #expect(try await setup.eventuallyStored(callback.id) { $0.status == .failed })
            #expect(try await setup.stored(callback.id)?.attempts == 7)
            #expect(setup.receiver.received.count == 7)
        }
        try await setup.shutdown()
    }

    @Test func aPrivateAddressIsRefusedAtSendTimeUnlessItsNetworkIsAllowed() async throws {
        let setup = try await CallbackTestServer.start(allowedNetworks: [])
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let callback = try await setup.enqueue(to: setup.receiver.url(), token: token, owner: owner)
            #expect(try await setup.eventuallyStored(callback.id) { $0.status == .failed })
            let stored = try #require(try await setup.stored(callback.id))
            #expect(stored.lastError?.contains("HERALD_CALLBACK_ALLOWED_NETWORKS") == true)
            #expect(stored.attempts == 1)
            #expect(setup.receiver.received.isEmpty)
        }
        try await setup.shutdown()
    }

    @Test func aSlowReceiverHoldsOnlyItsOwnHostsPlaces() async throws {
        let setup = try await CallbackTestServer.start(maximumPerHost: 2)
        let fast = try await CallbackReceiverDouble.start()
        setup.receiver.answer("/slow", with: .stalled)
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            var slow: [CallbackDelivery] = []
            for _ in 0..<5 { slow.append(try await setup.enqueue(to: setup.receiver.url("/slow"), token: token, owner: owner)) }
            #expect(await eventually { setup.receiver.inFlight == 2 })
            // Three wait for the host (not counted as attempts) while another host's callback goes out.
            let other = try await setup.enqueue(to: fast.url(), token: token, owner: owner)
            #expect(try await setup.eventuallyStored(other.id) { $0.status == .delivered })
            #expect(fast.received.count == 1)
            #expect(setup.receiver.inFlight == 2)
            // Two are in flight (their attempt not saved yet), three were put off by a second without an attempt (on a
            // loaded machine the two in flight may have been put off once too, before they got their places).
            var postponed = 0
            for callback in slow {
                let stored = try #require(try await setup.stored(callback.id))
                #expect(stored.attempts == 0 && stored.status == .pending)
                if let next = stored.nextAttemptAt, next > callback.createdAt { postponed += 1 }
            }
            #expect(postponed >= 3)
            // The stalled receiver goes away: its attempts end and are retried later.
            try await setup.receiver.shutdown()
        }
        try await fast.shutdown()
    }

    @Test func callbackURLIsCheckedOnPostNotifications() async throws {
        let setup = try await CallbackTestServer.start(allowedNetworks: [])
        try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            func send(_ url: String) async throws -> TestResponse {
                let body = try JSONValue.object(["title": "Leak", "body": "Kitchen", "callback_url": .string(url)]).encoded()
                return try await client.post("/notifications", String(decoding: body, as: UTF8.self), headers: token.bearer)
            }
            let refused = [
                "http://example.com/hook", "ftp://example.com", "https://", "https://user:pw@example.com/", "https://127.0.0.1/hook",
                "https://10.1.2.3/hook", "https://[::1]/hook", "https://localhost/hook", "https://a.localhost/hook", "https://169.254.169.254/",
                "https://example.com/a b", "https://example.com:0/", "https://example.com:65536/",
                "https://example.com/" + String(repeating: "a", count: 2_029),
            ]
            for url in refused {
                let response = try await send(url)
                #expect(response.status == .badRequest, "\(url)")
                #expect(try response.json()["field"] == "callback_url", "\(url)")
            }
            let longest = "https://example.com/" + String(repeating: "a", count: 2_028)
            #expect(longest.utf8.count == CallbackURLRule.maximumLength)
            for url in ["https://example.com/hook", "https://93.184.216.34:8443/x", longest] {
                #expect(try await send(url).status == .created, "\(url)")
            }
            let notNumber = try await client.post(
                "/notifications", #"{"title": "a", "body": "b", "callback_url": 5}"#, headers: token.bearer)
            #expect(notNumber.status == .badRequest)
            #expect(try notNumber.json()["field"] == "callback_url")
            let loopback = try await send(setup.receiver.url())
            #expect(
                try loopback.json()["error"]?.stringValue?.contains("HERALD_CALLBACK_ALLOWED_NETWORKS") == true,
                "\(String(buffer: loopback.body))")
        }
        try await setup.shutdown()
    }

    @Test func callbackURLToAnAllowedNetworkIsKeptWithTheNotification() async throws {
        let setup = try await CallbackTestServer.start()
        let id = try await setup.server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let body = try JSONValue.object(["title": "Leak", "body": "Kitchen", "callback_url": .string(setup.receiver.url())]).encoded()
            let response = try await client.post("/notifications", String(decoding: body, as: UTF8.self), headers: token.bearer)
            #expect(response.status == .created)
            return try #require(try response.json()["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await setup.server.openStore().notification(id: id))
        #expect(stored.content?.meta[CallbackOutbox.callbackURLKey] == .string(setup.receiver.url()))
        // Kept, never sent to the device.
        #expect(!String(decoding: stored.payload, as: UTF8.self).contains("callback_url"))
        try await setup.shutdown()
    }
}
