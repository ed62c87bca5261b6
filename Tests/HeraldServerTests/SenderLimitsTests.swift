import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// What the daily limit exempts still has a limit, a device's backlog is bounded, and a sender's expiry cannot
/// outlive the time to live (issue: no client can hurt another).
@Suite("Limits on what senders can pile up")
struct SenderLimitsTests {
    static let critical = #"{"push": {"sound": {"name": "default", "critical": 1, "volume": 1.0}}}"#

    @Test func criticalAlertsAndCommandsHaveADailyCapOfTheirOwn() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.exemptDailyLimit = 3
        let apns = started
        try await apns.server.run { client in
            let registration = try await client.register()
            for (message, data) in [("Smoke!", Self.critical), ("update_widgets", nil), ("Smoke again!", Self.critical)] {
                let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: message, data: data))
                #expect(response.status == .created)
            }
            // The fourth exempt one, in Home Assistant's shape of a refused limit.
            let refused = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: "Fire!", data: Self.critical))
            #expect(refused.status == .tooManyRequests)
            let json = try refused.json()
            #expect(json["errorType"] == "RateLimited")
            try expectValidRateLimits(json["rateLimits"])
            #expect(json["message"]?.stringValue?.contains("3 critical alerts and commands") == true)
            #expect(refused.headers[.retryAfter] != nil)
            // In the default shape too (PushWard's level: critical), and ordinary notifications still go.
            let token = try await client.createToken(for: registration)
            let action = try await client.sendAction(token.bearer, body: #"{"title": "Smoke", "body": "Hall", "level": "critical"}"#)
            #expect(action.status == .tooManyRequests)
            #expect(try action.json()["code"] == "exempt_limit_reached")
            let ordinary = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(ordinary.status == .created)
            #expect(apns.production.acceptedPushes.count == 4)
        }
        try await apns.shutdown()
    }

    @Test func aSendersExpiryIsClampedToTheTimeToLive() async throws {
        var started = try await APNsTestServer.start()
        started.server.configuration.notificationTTL = 3_600
        let apns = started
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, data: #"{"apns_headers": {"apns-expiration": "4102444800"}}"#))
            #expect(response.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            let latest = Int(apns.server.clock.now().timeIntervalSince1970) + 3_600
            #expect(push.header("apns-expiration") == String(latest))
        }
        try await apns.shutdown()
    }

    @Test func aDevicesBacklogIsBoundedAnd429NamesIt() async throws {
        // No provider is configured: every notification stays pending for the device.
        var server = try TestServer()
        server.configuration.maximumPendingPerDevice = 3
        try await server.run { client in
            let registration = try await client.register()
            let other = try await client.register(token: Fixtures.apnsToken(2))
            for _ in 1...3 { #expect(try await client.notify(registration.userID).status == .created) }
            let refused = try await client.notify(registration.userID)
            #expect(refused.status == .tooManyRequests)
            #expect(try refused.json()["code"] == "backlog_full")
            #expect(refused.headers[.retryAfter] == "60")
            let homeAssistant = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(homeAssistant.status == .tooManyRequests)
            #expect(try homeAssistant.json()["errorType"] == "RateLimited")
            // Another device's backlog is its own.
            #expect(try await client.notify(other.userID).status == .created)
        }
        let store = try server.openStore()
        let pending = try await store.recentNotifications(deviceID: nil, limit: 20).filter { $0.status == .pending }
        #expect(pending.count == 4)
    }
}
