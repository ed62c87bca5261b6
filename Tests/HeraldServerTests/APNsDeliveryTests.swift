import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing

/// Sends through the whole server to the APNs doubles over HTTP/2 + TLS and checks what reached them.
@Suite("Delivery to APNs")
struct APNsDeliveryTests {
    @Test func registerThenNotifyReachesAPNsWithTheDocumentedHeadersAndPayload() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x42))
            let response = try await client.post("/api/push/notify", SeedExamples.filled(SeedExamples.frigateReview, registration.userID))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "delivered")
            #expect(json["warning"] == nil)
            let id = try #require(json["id"]?.stringValue)

            #expect(apns.production.requests.count == 1)
            #expect(apns.sandbox.requests.isEmpty)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(push.method == "POST")
            #expect(push.path == "/3/device/\(Fixtures.apnsToken(0x42))")
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-priority") == "10")
            #expect(push.header("apns-topic") == APNsTestServer.topic)
            #expect(push.header("apns-collapse-id") == "review-123")
            #expect(push.header("apns-id") == id)
            let expiration = try #require(push.header("apns-expiration").flatMap(Int.init))
            #expect(abs(Double(expiration) - apns.server.clock.now().addingTimeInterval(86_400).timeIntervalSince1970) < 2)
            #expect(push.providerTokenIsValid)
            #expect(push.providerToken?.keyID == apns.key.keyID)
            #expect(push.providerToken?.teamID == apns.key.teamID)
            #expect(String(decoding: push.body, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"Front Door","title":"Review item detected"},"mutable-content":1,"sound":"default"},"notification_id":"review-123","open":{"id":"review-123","type":"frigate_review"},"snapshot":{"id":"review-123","type":"frigate_review"}}"#)

            let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer)
            let stateJSON = try state.json()
            #expect(stateJSON["status"] == "delivered")
            #expect(stateJSON["attempts"] == 1)
            #expect(stateJSON["apns_id"] == .string(push.responseAPNsID ?? ""))
        }
        try await apns.shutdown()
    }

    /// docs/api.md: a notification's id is a version 7 UUID that begins with its acceptance time in milliseconds.
    @Test func notificationIdsBeginWithTheirAcceptanceTime() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x43))
            var sent: [(id: String, at: Date)] = []
            for _ in 0..<2 {
                let at = apns.server.clock.now()
                sent.append((try #require(try await client.notify(registration.userID).json()["id"]?.stringValue), at))
                apns.server.clock.advance(by: 0.005)
            }
            for (id, at) in sent {
                #expect(id == id.lowercased())
                #expect(try #require(UUID(uuidString: id)).uuid.6 >> 4 == 7, "\(id)")
                let milliseconds = Int(((at.timeIntervalSince1970 * 1_000_000).rounded() / 1_000).rounded(.down))
                #expect(Int(id.replacingOccurrences(of: "-", with: "").prefix(12), radix: 16) == milliseconds, "\(id)")
            }
            #expect(sent[0].id < sent[1].id)
        }
        try await apns.shutdown()
    }

    @Test func sandboxDevicesGoToTheSandboxEndpoint() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(7), environment: "sandbox")
            let response = try await client.notify(registration.userID)
            #expect(try response.json()["status"] == "delivered")
            #expect(apns.sandbox.acceptedPushes.count == 1)
            #expect(apns.production.requests.isEmpty)
        }
        try await apns.shutdown()
    }

    @Test func aDeadTokenAnswers410AndIsNotUsedAgainUntilReRegistration() async throws {
        let apns = try await APNsTestServer.start()
        let token = Fixtures.apnsToken(9)
        apns.production.markUnregistered(token)
        try await apns.server.run { client in
            let registration = try await client.register(token: token)
            let first = try await client.notify(registration.userID)
            #expect(first.status == .gone)
            let json = try first.json()
            #expect(json["code"] == "device_must_reregister")
            #expect(json["reason"] == "Unregistered")
            #expect(first.rateLimit?.limit == 150)
            #expect(apns.production.requests.count == 1)

            let second = try await client.notify(registration.userID)
            #expect(second.status == .gone)
            #expect(second.rateLimit?.limit == 150)
            #expect(apns.production.requests.count == 1)  // Herald did not try the dead token again
            // Home Assistant's shape of the same: 500 InvalidToken, with the headers too.
            let relayed = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(relayed.status == .internalServerError)
            #expect(try relayed.json()["errorType"] == "InvalidToken")
            #expect(relayed.rateLimit?.limit == 150)

            apns.production.unmark(token)
            let again = try await client.post(
                "/api/push/register", #"{"token": "\#(token)"}"#, headers: registration.basic)
            #expect(again.status == .ok)
            let third = try await client.notify(registration.userID)
            #expect(third.status == .created)
            #expect(try third.json()["status"] == "delivered")
            #expect(apns.production.acceptedPushes.count == 1)
        }
        try await apns.shutdown()
    }

    @Test func badDeviceTokenAlsoDeactivatesTheDevice() async throws {
        let apns = try await APNsTestServer.start()
        let token = Fixtures.apnsToken(10)
        apns.production.markBadDeviceToken(token)
        try await apns.server.run { client in
            let registration = try await client.register(token: token)
            let response = try await client.notify(registration.userID)
            #expect(response.status == .gone)
            #expect(try response.json()["reason"] == "BadDeviceToken")
        }
        try await apns.shutdown()
    }

    @Test(arguments: [(429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable")])
    func transientFailuresAreQueuedAndRetriedFromTheStore(status: Int, reason: String) async throws {
        let apns = try await APNsTestServer.start()
        apns.production.failNext(1, status: status, reason: reason)
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.notify(registration.userID)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["status"] == "queued")
            let id = try #require(json["id"]?.stringValue)

            let pending = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(pending["status"] == "pending")
            #expect(pending["attempts"] == 1)
            #expect(pending["last_error"] == .string(reason))
            #expect(apns.production.acceptedPushes.isEmpty)

            // The retry is scheduled in the store after a back-off; the test clock stands still, so nothing happens
            // until the test moves it past that time.
            let nextAttempt = try #require(pending["next_attempt_at"]?.stringValue.flatMap {
                try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0)
            })
            #expect(nextAttempt > apns.server.clock.now())
            #expect(nextAttempt <= apns.server.clock.now().addingTimeInterval(120))
            #expect(apns.production.requests.count == 1)
            apns.server.clock.advance(by: 120)
            let delivered = try await eventually {
                try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()["status"] == "delivered"
            }
            #expect(delivered)
            #expect(apns.production.acceptedPushes.count == 1)
            #expect(apns.production.requests.count == 2)
        }
        try await apns.shutdown()
    }

    @Test func permanentRefusalsAreReportedAndNeverRetried() async throws {
        let apns = try await APNsTestServer.start()
        apns.production.failNext(1, status: 400, reason: "BadTopic")
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.notify(registration.userID)
            #expect(response.status == .badGateway)
            #expect(response.rateLimit?.limit == 150)
            let json = try response.json()
            #expect(json["code"] == "rejected_by_provider")
            #expect(json["reason"] == "BadTopic")
            let id = try #require(json["id"]?.stringValue)
            let state = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer).json()
            #expect(state["status"] == "failed")
            #expect(state["last_error"] == "BadTopic")
            // Failed is final: no attempt is scheduled, whatever the clock says.
            #expect(state["next_attempt_at"] == nil)

            // The failed notification gave its quota back. (Read before the clock moves: the test clock starts at the
            // real time, and an hour later may be the next UTC day, with counters of its own.)
            let limits = try await client.post("/api/push/homeassistant/rate_limits", #"{"push_token": "\#(registration.userID)"}"#).json()
            #expect(limits["rateLimits"]?.objectValue?["errors"] == 1)
            #expect(limits["rateLimits"]?.objectValue?["successful"] == 0)

            apns.server.clock.advance(by: 3_600)
            #expect(apns.production.requests.count == 1)
        }
        try await apns.shutdown()
    }

    @Test func notificationsQueuedWhileAPNsIsDownAreDeliveredWhenItIsBack() async throws {
        let apns = try await APNsTestServer.start()
        apns.production.failNext(10, status: 503, reason: "ServiceUnavailable")
        try await apns.server.run { client in
            let registration = try await client.register()
            var ids: [String] = []
            for index in 0..<3 {
                let response = try await client.notify(registration.userID, title: "n\(index)")
                #expect(try response.json()["status"] == "queued")
                ids.append(try #require(try response.json()["id"]?.stringValue))
            }
            apns.production.clearFaults()
            apns.server.clock.advance(by: 30)
            #expect(await eventually { apns.production.acceptedPushes.count == 3 })
            #expect(Set(apns.production.acceptedPushes.compactMap { $0.header("apns-id") }) == Set(ids))
        }
        try await apns.shutdown()
    }
}

@Suite("Delivery under load")
struct DeliveryUnderLoadTests {
    /// With few delivery slots, most notifications wait in the ready queue or the schedule while others are in flight;
    /// each must still reach APNs exactly once (the lease is the guard).
    @Test func everyNotificationIsSentExactlyOnce() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.deliveryConcurrency = 2
        started.server.configuration.deliveryWait = .zero
        let apns = started
        try await apns.server.run { client in
            let userIDs = try await client.registerDevices(4)
            let port = try #require(client.port)
            let ids = try await sendConcurrently(port: port, userIDs: userIDs, count: 120, concurrency: 120)
            #expect(ids.count == 120)
            #expect(await eventually { Set(apns.production.acceptedPushes.compactMap { $0.header("apns-id") }).count == 120 })
            // Delivered is final: once the store says so for every one, no further attempt can go out (instead of
            // waiting a while for a duplicate that may or may not come).
            let store = try apns.server.openStore()
            #expect(try await eventually {
                for id in ids {
                    guard let uuid = UUID(uuidString: id), try await store.notification(id: uuid)?.status == .delivered else { return false }
                }
                return true
            })
            try await store.close()
            let sent = apns.production.acceptedPushes.compactMap { $0.header("apns-id") }
            #expect(sent.count == 120, "\(sent.count - Set(sent).count) duplicates")
            #expect(Set(sent) == ids, "\(Set(sent).symmetricDifference(ids).count) ids differ")
        }
        try await apns.shutdown()
    }
}
