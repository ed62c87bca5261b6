import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

/// What `scripts/pushward-schemathesis.sh` found Herald accepting that PushWard's openapi.yaml forbids, held over real
/// HTTP: each request is refused with 400 and a problem naming the member, and nothing was created or changed.
@Suite("PushWard schema conformance")
struct PushWardSchemaConformanceTests {
    @Test func nullMembersOfACreateAreRefused() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            for member in ["stale_ttl", "ended_ttl", "dismissal_ttl", "priority"] {
                let body = #"{"slug": "oven", "name": "Oven", "\#(member)": null}"#
                let response = try await client.activity(.post, "/activities", body, as: device)
                #expect(response.status == .badRequest, "\(member)")
                #expect(response.headers[.contentType] == "application/problem+json")
                let problem = try response.problem()
                #expect(problem["code"] == "request.body_invalid")
                #expect(problem["detail"]?.stringValue?.contains(member) == true)
            }
            #expect(try await client.activity(.get, "/activities/oven", as: device).status == .notFound)
        }
        try await apns.shutdown()
    }

    @Test func nullStateContentPrioritySoundOfAPatchAreRefusedAndNullTTLsClear() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let created = try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven", "stale_ttl": 60}"#, as: device)
            #expect(created.status == .created)
            for member in ["state", "content", "priority", "sound"] {
                let response = try await client.activity(.patch, "/activities/oven", #"{"\#(member)": null}"#, as: device)
                #expect(response.status == .badRequest, "\(member)")
                #expect(try response.problem()["code"] == "request.body_invalid")
            }
            // PushWard's description: a TTL's null clears it (activity-rules.md).
            let cleared = try await client.activity(.patch, "/activities/oven", #"{"stale_ttl": null}"#, as: device)
            #expect(cleared.status == .ok)
            #expect(cleared.jsonObject?["stale_ttl"] == nil)
        }
        try await apns.shutdown()
    }

    @Test func anUpsertThatIsNotABooleanIsRefused() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            for query in ["upsert=null", "upsert=1", "upsert=true&upsert=yes"] {
                let response = try await client.activity(.patch, "/activities/oven?\(query)", #"{"priority": 1}"#, as: device)
                #expect(response.status == .badRequest, "\(query)")
                let problem = try response.problem()
                #expect(problem["code"] == "request.query_invalid")
            }
            #expect(try await client.activity(.get, "/activities/oven", as: device).status == .notFound)
            let upserted = try await client.activity(.patch, "/activities/oven?upsert=true", #"{"priority": 1}"#, as: device)
            #expect(upserted.status == .created)
            let notUpserted = try await client.activity(.patch, "/activities/grill?upsert=false", #"{"priority": 1}"#, as: device)
            #expect(notUpserted.status == .notFound)
        }
        try await apns.shutdown()
    }
}

extension PushWardSchemaConformanceTests {
    @Test func anEmptyLimitOrStateAndANullTemplateAreRefused() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let emptyLimit = try await client.activity(.get, "/activities?limit=", as: device)
            #expect(emptyLimit.status == .unprocessableContent)
            #expect(try emptyLimit.problem()["code"] == "request.query_invalid")
            let emptyState = try await client.activity(.get, "/activities?state=", as: device)
            #expect(emptyState.status == .badRequest)
            #expect(try emptyState.problem()["code"] == "activity.state_invalid")
            #expect(try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device).status == .created)
            let nullTemplate = try await client.activity(.patch, "/activities/oven", #"{"content": {"template": null}}"#, as: device)
            #expect(nullTemplate.status == .badRequest)
            #expect(try nullTemplate.problem()["code"] == "request.body_invalid")
            #expect(try await client.activity(.get, "/activities/oven", as: device).jsonObject?["content"] == ["template": "generic"])
        }
        try await apns.shutdown()
    }
}
