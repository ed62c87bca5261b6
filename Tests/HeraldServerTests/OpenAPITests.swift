import Foundation
import HTTPTypes
import NIOCore
import HeraldServer
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
                "/api/push/register", "/api/push/notify", "/api/push/notifications/{id}", "/api/push/homeassistant",
                "/api/push/homeassistant/rate_limits", "/api/push/tokens", "/api/push/tokens/{idOrName}", "/notifications",
                "/api/push/websocket", "/openapi.yaml", "/healthz", "/readyz",
            ])
        }
    }
}
