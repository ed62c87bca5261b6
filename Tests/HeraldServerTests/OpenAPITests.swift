import Foundation
import HTTPTypes
import HeraldCore
import NIOCore
@testable import HeraldServer
import HummingbirdTesting
import Testing
import Yams

@Suite("OpenAPI document")
struct OpenAPITests {
    @Test func theServerServesAValidDocumentListingEveryRoute() async throws {
        try await TestServer().run { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            let document = try #require(try Yams.load(yaml: String(decoding: response.body.readableBytesView, as: UTF8.self)) as? [String: Any])
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: Any])
            #expect(Set(paths.keys) == [
                "/api/push/register", "/api/push/notify", "/api/push/notifications/{id}", "/api/push/notifications", "/api/push/homeassistant",
                "/api/push/homeassistant/rate_limits", "/api/push/tokens", "/api/push/tokens/{idOrName}", "/notifications",
                "/api/push/websocket", "/openapi.yaml", "/healthz", "/readyz", "/metrics", "/health", "/auth/me",
                "/api/push/webpush/key", "/api/push/activities/{slug}/token", "/notifications/scheduled", "/notifications/scheduled/{id}",
                // The senders (docs/senders.md).
                "/", "/{topic}", "/{topic}/publish", "/{key}/{title}/{body}", "/message", "/push", "/api/push/hooks/{preset}",
                // Issue 39: answers, the app's events, the inbox.
                "/notifications/answers/{id}", "/api/push/notifications/{id}/answer", "/api/push/notifications/{id}/events",
                "/api/push/inbox",
                // Issue 39, section 3: receipts.
                "/notifications/receipts/{id}", "/notifications/receipts/{id}/cancel", "/notifications/receipts/cancel",
                // Issue 42, section 1: topics.
                "/api/push/topics", "/api/push/topics/{topic_id}", "/api/push/topics/{topic_id}/members",
                "/api/push/topics/{topic_id}/members/{member_id}", "/api/push/topics/{topic_id}/join_code",
                // Issue 39: a token's outcome callbacks.
                "/notifications/callback",
                // Issue 39, section 2: the app's answer to an approval card.
                "/api/push/activities/{slug}/answer",
            ])
        }
    }
}

@Suite("Answers the OpenAPI document promises")
struct DocumentedAnswerTests {
    @Test func aMethodAPathDoesNotTakeIs405WithAllowAndAJSONBody() async throws {
        try await TestServer().run { client in
            let cases: [(String, HTTPRequest.Method, String)] = [
                ("/api/push/notify", .get, "POST"),
                ("/api/push/register", .put, "DELETE, POST"),
                ("/healthz", .post, "GET, HEAD"),
                ("/api/push/notifications/\(UUID().uuidString)", .delete, "GET, HEAD"),
                ("/api/push/tokens/some-name", .get, "DELETE"),
                ("/api/push/websocket", .post, "GET, HEAD"),
                ("/notifications", .patch, "POST"),
                ("/api/push/notify", try #require(HTTPRequest.Method("QUERY")), "POST"),
                // A written-out path beside a captured one: the most specific is the one asked (not receipts/{id}).
                ("/notifications/receipts/cancel", .get, "POST"),
                ("/notifications/receipts/cancel", .options, "POST"),
            ]
            for (uri, method, allow) in cases {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                let json = try response.json()
                #expect(json["code"] == "method_not_allowed", "\(method) \(uri)")
                #expect(json["error"]?.stringValue?.contains(allow) == true, "\(method) \(uri)")
            }
            // The Home Assistant paths answer in Home Assistant's shape.
            let homeAssistant = try await client.execute(uri: "/api/push/homeassistant/rate_limits", method: .get)
            #expect(homeAssistant.status == .methodNotAllowed)
            #expect(homeAssistant.headers[.allow] == "POST")
            #expect(try homeAssistant.json()["message"]?.stringValue?.isEmpty == false)

            // HEAD goes with GET; an unknown path stays 404, and so does a route's own 404.
            #expect(try await client.execute(uri: "/healthz", method: .head).status == .ok)
            let nowhere = try await client.execute(uri: "/api/push/nowhere", method: .delete)
            #expect(nowhere.status == .notFound)
            #expect(nowhere.headers[.allow] == nil)
            let unknownNotification = try await client.execute(uri: "/api/push/notifications/\(UUID().uuidString)", method: .get)
            #expect(unknownNotification.status == .notFound)
            #expect(try unknownNotification.json()["code"] == "not_found")
        }
    }

    @Test func theWebSocketPathWithoutAnUpgradeIs426AndTheUpgradeStillWorks() async throws {
        try await TestServer().run { client in
            let plain = try await client.execute(uri: "/api/push/websocket", method: .get)
            #expect(plain.status == .upgradeRequired)
            #expect(plain.headers[.upgrade] == "websocket")
            #expect(try plain.json()["code"] == "upgrade_required")

            let registration = try await client.register()
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration)
            await socket.close()
        }
    }

    /// The upgrade is decided by the path alone (a query and a trailing slash allowed); no other path is upgraded.
    @Test func onlyTheWebSocketPathIsUpgraded() async throws {
        try await TestServer().run { client in
            let port = try #require(client.port)
            let registration = try await client.register()
            for path in ["/api/push/websocket?client=ios", "/api/push/websocket/"] {
                let socket = WebSocketTestClient(port: port, path: path)
                await socket.subscribe(registration)
                await socket.close()
            }
            // Another path is not upgraded: the client's handshake fails and no session starts.
            for path in ["/api/push/websocketx", "/api/push/notify"] {
                let refused = WebSocketTestClient(port: port, path: path)
                #expect(await refused.isClosed(within: 5), "\(path)")
                #expect(await refused.next(within: 0.2) == nil)
            }
        }
        #expect(WebSocketController.isOwnPath("/api/push/websocket"))
        #expect(!WebSocketController.isOwnPath("/api/push/websocket/x"))
        #expect(!WebSocketController.isOwnPath("/api/push/notify"))
        #expect(!WebSocketController.isOwnPath(nil))
    }
}
