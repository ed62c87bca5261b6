import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// `GET /api/push/notifications`: a device owner's latest notifications, for the web app's inbox (docs/api.md).
@Suite("A device's recent notifications")
struct RecentNotificationsTests {
    @Test func theOwnerReadsTheirNotificationsNewestFirstAsTheServiceWorkerReceivesThem() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let other = try await client.register(token: Fixtures.apnsToken(2))
            let first = try await client.notify(owner.userID, title: "Motion", body: "Garden", extra: #", "notification_id": "garden""#)
            #expect(first.status == .created)
            _ = try await client.notify(other.userID, title: "Not yours", body: "Elsewhere")
            server.clock.advance(by: 1)
            let token = try await client.createToken(for: owner)
            let action = #"""
                {"title": "Overseerr", "body": "New request", "url": "https://overseerr.example.com/request/123",
                 "image_url": "https://overseerr.example.com/poster.jpg", "level": "time-sensitive",
                 "actions": [{"id": "approve", "title": "Approve", "url": "https://overseerr.example.com/api/approve",
                              "method": "POST", "headers": {"Authorization": "Bearer x"}, "body": "{}"}]}
                """#
            let second = try await client.sendAction(token.bearer, body: action)
            #expect(second.status == .created)

            let response = try await client.execute(uri: "/api/push/notifications", method: .get, headers: owner.basic)
            #expect(response.status == .ok)
            let listed = try Self.notifications(response)
            #expect(listed.count == 2)
            let newest = try #require(listed.first)
            #expect(newest["id"] == (try second.json()["id"]))
            #expect(newest["title"] == "Overseerr")
            #expect(newest["body"] == "New request")
            #expect(newest["url"] == "https://overseerr.example.com/request/123")
            #expect(newest["image"] == "https://overseerr.example.com/poster.jpg")
            #expect(newest["level"] == "time-sensitive")
            #expect(newest["status"] == "pending")  // no provider is configured: it waits
            #expect(newest["created_at"]?.stringValue?.hasSuffix("Z") == true)
            let actions = try #require(Self.array(newest["actions"]))
            #expect(actions.first?.objectValue?["method"] == "POST")
            #expect(actions.first?.objectValue?["headers"] == ["Authorization": "Bearer x", "Content-Type": "application/json"])
            #expect(actions.first?.objectValue?["body"] == "{}")
            let oldest = try #require(listed.last)
            #expect(oldest["id"] == (try first.json()["id"]))
            #expect(oldest["title"] == "Motion")
            #expect(oldest["tag"] == "garden")
            #expect(oldest["actions"] == nil)

            let limited = try await client.execute(uri: "/api/push/notifications?limit=1", method: .get, headers: owner.basic)
            #expect(try Self.notifications(limited).map { $0["id"] } == [newest["id"]])
        }
    }

    @Test func onlyTheOwnersCredentialsReadTheList() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            _ = try await client.notify(owner.userID)
            let missing = try await client.execute(uri: "/api/push/notifications", method: .get)
            #expect(missing.status == .unauthorized)
            #expect(try missing.json()["code"] == "credentials_required")
            // A sender knows the USER_ID; that does not show what else the device was sent.
            let sender = try await client.execute(uri: "/api/push/notifications", method: .get, headers: owner.bearer)
            #expect(sender.status == .unauthorized)
            let wrong = Registration(userID: owner.userID, secret: String(repeating: "0", count: 64))
            let wrongSecret = try await client.execute(uri: "/api/push/notifications", method: .get, headers: wrong.basic)
            #expect(wrongSecret.status == .forbidden)
            #expect(try wrongSecret.json()["code"] == "wrong_device_secret")
            let unknown = Registration(userID: String(repeating: "a", count: 64), secret: owner.secret)
            let unknownUser = try await client.execute(uri: "/api/push/notifications", method: .get, headers: unknown.basic)
            #expect(unknownUser.status == .notFound)
            #expect(try unknownUser.json()["code"] == "unknown_user")
        }
    }

    @Test(arguments: ["0", "101", "ten", "-1", ""])
    func aLimitOutsideOneToAHundredIs400(limit: String) async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let response = try await client.execute(uri: "/api/push/notifications?limit=\(limit)", method: .get, headers: owner.basic)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["code"] == "invalid_field")
            #expect(json["field"] == "limit")
        }
    }

    @Test func aDeviceWithoutNotificationsHasAnEmptyList() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let response = try await client.execute(uri: "/api/push/notifications", method: .get, headers: owner.basic)
            #expect(response.status == .ok)
            #expect(try response.json() == ["notifications": []])
        }
    }

    private static func notifications(_ response: TestResponse) throws -> [JSONObject] {
        let elements = try #require(array(try response.json()["notifications"]))
        return try elements.map { try #require($0.objectValue) }
    }

    private static func array(_ value: JSONValue?) -> [JSONValue]? {
        if case .array(let elements)? = value { elements } else { nil }
    }
}
