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

/// Home Assistant's request body (notify.py), for a USER_ID and a `data` object.
func homeAssistantBody(_ userID: String, message: String = "Hello World", title: String? = "Test message sent via mobile_app.notify", data: String? = nil) -> String {
    var members = [#""message": \#(jsonString(message))"#, #""push_token": "\#(userID)""#]
    if let title { members.append(#""title": \#(jsonString(title))"#) }
    members.append(#""registration_info": {"app_id": "io.robbie.HomeAssistant", "app_version": "2025.11", "os_version": "18.1", "webhook_id": "webhook_id_from_registration"}"#)
    if let data { members.append(#""data": \#(data)"#) }
    return "{" + members.joined(separator: ", ") + "}"
}

private func jsonString(_ text: String) -> String {
    String(decoding: try! JSONValue.string(text).encoded(), as: UTF8.self)
}

/// Checks what Home Assistant requires of every `rateLimits` object: integer counts and a zoned `resetsAt`.
func expectValidRateLimits(_ value: JSONValue?, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let limits = try #require(value?.objectValue, sourceLocation: sourceLocation)
    for key in ["attempts", "successful", "errors", "total", "maximum", "remaining"] {
        guard case .int? = limits[key] else {
            Issue.record("rateLimits.\(key) is not an integer: \(String(describing: limits[key]))", sourceLocation: sourceLocation)
            continue
        }
    }
    let resetsAt = try #require(limits["resetsAt"]?.stringValue, sourceLocation: sourceLocation)
    #expect(resetsAt.hasSuffix("Z") && resetsAt.hasSuffix("T00:00:00.000Z"), sourceLocation: sourceLocation)
    #expect((try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(resetsAt)) != nil, sourceLocation: sourceLocation)
}

@Suite("Home Assistant push relay")
struct HomeAssistantTests {
    static let noon = Date(timeIntervalSince1970: 1_763_812_800)  // 2025-11-22T12:00:00Z

    @Test func homeAssistantsOwnBodyIsAcceptedWith201AndRateLimits() async throws {
        try await TestServer(clock: TestClock(Self.noon)).run { client in
            let registration = try await client.register()
            let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: #"{"key": "value"}"#))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["target"] == .string(registration.userID))
            #expect(json["messageId"]?.stringValue?.isEmpty == false)
            try expectValidRateLimits(json["rateLimits"])
            #expect(json["rateLimits"]?.objectValue?["resetsAt"] == "2025-11-23T00:00:00.000Z")
            #expect(json["rateLimits"]?.objectValue?["successful"] == 1)
            #expect(json["rateLimits"]?.objectValue?["remaining"] == 149)
        }
    }

    @Test func everyErrorIsJSONInAShapeHomeAssistantReads() async throws {
        var server = try TestServer()
        server.configuration.maximumBodyBytes = 4_096
        try await server.run { client in
            let missingToken = try await client.post("/api/push/homeassistant", #"{"message": "hi"}"#)
            #expect(missingToken.status == .forbidden)
            #expect(try missingToken.json()["errorMessage"]?.stringValue?.isEmpty == false)

            let unknown = try await client.post("/api/push/homeassistant", homeAssistantBody(Secrets.random256BitHex()))
            #expect(unknown.status == .forbidden)
            #expect(try unknown.json()["errorMessage"]?.stringValue?.isEmpty == false)

            let registration = try await client.register()
            for body in [#"{"push_token": "\#(registration.userID)"}"#, #"{"push_token": "\#(registration.userID)", "message": 3}"#, "not json",
                         homeAssistantBody(registration.userID, data: #"{"push": "loud"}"#),
                         homeAssistantBody(registration.userID, data: #"{"tag": "\#(String(repeating: "t", count: 65))"}"#),
                         homeAssistantBody(registration.userID, data: #"{"apns_headers": {"apns-topic": "other.app"}}"#),
                         homeAssistantBody(registration.userID, data: #"{"apns_headers": {"apns-priority": "7"}}"#)] {
                let response = try await client.post("/api/push/homeassistant", body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(try response.json()["message"]?.stringValue?.isEmpty == false)
            }

            let tooLarge = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: String(repeating: "m", count: 5_000)))
            #expect(tooLarge.status == .contentTooLarge)
            #expect(try tooLarge.json()["message"]?.stringValue?.isEmpty == false)

            let wrongMethod = try await client.execute(uri: "/api/push/homeassistant", method: .get)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "POST")
            #expect(try wrongMethod.json()["message"]?.stringValue?.isEmpty == false)

            let nowhere = try await client.post("/api/push/homeassistant/nowhere", "{}")
            #expect(nowhere.status == .notFound)
            #expect(try nowhere.json()["message"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func dataAndRegistrationInfoMustBeObjects() async throws {
        try await TestServer().run { client in
            let registration = try await client.register()
            for (body, field) in [
                (homeAssistantBody(registration.userID, data: #""""#), "data"),
                (homeAssistantBody(registration.userID, data: "[]"), "data"),
                (#"{"message": "hi", "push_token": "\#(registration.userID)", "registration_info": ""}"#, "registration_info"),
            ] {
                let response = try await client.post("/api/push/homeassistant", body)
                #expect(response.status == .badRequest, "\(body)")
                let message = try response.json()["message"]?.stringValue ?? ""
                #expect(message.hasPrefix(field), "\(message)")
            }
            // null is absent, as an omitted member.
            let withNull = try await client.post(
                "/api/push/homeassistant", #"{"message": "hi", "push_token": "\#(registration.userID)", "data": null, "registration_info": null}"#)
            #expect(withNull.status == .created)
        }
    }

    @Test func refusalsAfterThePushTokenIsKnownCarryTheRateLimitHeaders() async throws {
        try await TestServer().run { client in
            let registration = try await client.register()
            // A bad `data` member: 400, after the push_token was found; its quota is untouched.
            let invalid = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: #"{"push": "loud"}"#))
            #expect(invalid.status == .badRequest)
            #expect(invalid.rateLimit == .init(limit: 150, remaining: 150))
            // Before the device is known there is no quota to report. (The 500s: APNsDeliveryTests.)
            let unknown = try await client.post("/api/push/homeassistant", homeAssistantBody(Secrets.random256BitHex()))
            #expect(unknown.status == .forbidden)
            #expect(unknown.rateLimit == nil)
        }
    }

    @Test func pastTheDailyLimit429WithRateLimitedUntilMidnightUTC() async throws {
        let clock = TestClock(Self.noon)
        try await TestServer(dailyLimit: 2, clock: clock).run { client in
            let registration = try await client.register()
            for _ in 0..<2 {
                #expect(try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID)).status == .created)
            }
            let refused = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "43200")
            let json = try refused.json()
            #expect(json["errorType"] == "RateLimited")
            #expect(json["message"]?.stringValue?.isEmpty == false)
            #expect(json["target"] == .string(registration.userID))
            try expectValidRateLimits(json["rateLimits"])
            #expect(json["rateLimits"]?.objectValue?["remaining"] == 0)

            // Commands don't count and still go through.
            let command = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: "request_location_update", title: nil))
            #expect(command.status == .created)

            clock.set(Date(timeIntervalSince1970: 1_763_856_000))  // 2025-11-23T00:00:00Z: a new day
            let nextDay = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(nextDay.status == .created)
            let limits = try nextDay.json()["rateLimits"]?.objectValue
            #expect(limits?["successful"] == 1)
            #expect(limits?["resetsAt"] == "2025-11-24T00:00:00.000Z")
        }
    }

    @Test func concurrentSendersNeitherOverNorUnderCount() async throws {
        let server = try TestServer(dailyLimit: 5)
        try await server.run { client in
            let registration = try await client.register()
            let port = try #require(client.port)
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/push/homeassistant")
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(string: homeAssistantBody(registration.userID)))
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                        return response.status.code
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 5)
            #expect(statuses.filter { $0 == 429 }.count == 15)
            let limits = try await client.post("/api/push/homeassistant/rate_limits", #"{"push_token": "\#(registration.userID)"}"#)
            #expect(limits.status == .ok)
            let json = try limits.json()
            #expect(json["target"] == .string(registration.userID))
            try expectValidRateLimits(json["rateLimits"])
            let counts = json["rateLimits"]?.objectValue
            #expect(counts?["attempts"] == 20)
            #expect(counts?["successful"] == 5)
            #expect(counts?["total"] == 5)
        }
    }

    @Test func theDeviceIsToldOnceWhenItsQuotaIsUsedUp() async throws {
        let server = try TestServer(dailyLimit: 2)
        let userID = try await server.run { client in
            let registration = try await client.register()
            for _ in 0..<2 { _ = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID)) }
            return registration.userID
        }
        let store = try server.openStore()
        let device = try #require(try await store.device(userIDHash: Secrets.hash(userID)))
        let pending = try await store.pendingNotifications(deviceID: device.id, limit: 10)
        #expect(pending.count == 3)
        let announcement = try #require(pending.first { $0.collapseID == "herald-rate-limit" })
        #expect(announcement.quotaDay == nil)
        #expect(announcement.collapseID == "herald-rate-limit")
        let payload = try JSONValue.decode(announcement.payload).objectValue
        #expect(payload?["rate_limit"]?.objectValue?["loc-key"] == "rate_limit_notification.body")
        #expect(payload?["rate_limit"]?.objectValue?["maximum"] == 2)
    }

    @Test func anOperatorCanGiveAUserIDItsOwnLimit() async throws {
        let server = try TestServer(dailyLimit: 1)
        let registration = try await server.run { client in try await client.register() }
        let store = try server.openStore()
        try await DailyLimits.set(3, for: try #require(UserID(registration.userID)), in: store)
        try await store.close()
        try await server.run { client in
            for expected in [HTTPResponse.Status.created, .created, .created, .tooManyRequests] {
                let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
                #expect(response.status == expected)
                #expect(response.headers[.init("RateLimit-Limit")!] == "3")
            }
        }
    }
}
