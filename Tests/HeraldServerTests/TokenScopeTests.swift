import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

extension TestResponse {
    /// The body as PushWard's problem details: fails the test unless the content type is `application/problem+json`
    /// and `status` matches the answer's.
    func problem(sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONObject {
        #expect(headers[.contentType] == "application/problem+json", "content type", sourceLocation: sourceLocation)
        let object = try #require(try JSONValue.decode(Data(body.readableBytesView)).objectValue, sourceLocation: sourceLocation)
        #expect(object["status"] == .int(status.code), sourceLocation: sourceLocation)
        #expect(object["type"] == "about:blank" && object["title"] == .string(status.reasonPhrase), sourceLocation: sourceLocation)
        return object
    }
}

extension Registration {
    /// The USER_ID as the store looks it up.
    var id: UserID { UserID(userID)! }
}

extension TestClientProtocol {
    /// Creates an API token with the given `scopes` and `slugs` (JSON arrays as text; `nil` leaves the member out).
    func createToken(for owner: Registration, scopes: String?, slugs: String? = nil) async throws -> CreatedToken {
        var members = [#""name": "scoped \#(UUID().uuidString.prefix(8))""#]
        if let scopes { members.append(#""scopes": \#(scopes)"#) }
        if let slugs { members.append(#""slugs": \#(slugs)"#) }
        let response = try await post("/api/push/tokens", "{" + members.joined(separator: ", ") + "}", headers: owner.basic)
        #expect(response.status == .created)
        let json = try response.json()
        return CreatedToken(
            id: try #require(json["id"]?.stringValue), name: try #require(json["name"]?.stringValue),
            token: try #require(json["token"]?.stringValue))
    }
}

/// PushWard's key scopes and slugs on Herald's API tokens (issue 31 §2), `GET /health`, `GET /auth/me`, and a device's
/// push-to-start token at registration (§3), over real HTTP.
@Suite("API token scopes, PushWard's account paths, push-to-start tokens")
struct TokenScopeTests {
    @Test func aTokenCreatedWithScopesAndSlugsListsThemAndTheStoreKeepsThem() async throws {
        let server = try TestServer()
        let owner = try await server.run { client in
            let owner = try await client.register()
            let response = try await client.post(
                "/api/push/tokens", #"{"name": "oven", "scopes": ["activity:update"], "slugs": ["oven", "printer-*"]}"#,
                headers: owner.basic)
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["scopes"] == ["activity:update"])
            #expect(json["slugs"] == ["oven", "printer-*"])
            let listed = try #require(try await client.listTokens(of: owner).first)
            #expect(listed["scopes"] == ["activity:update"] && listed["slugs"] == ["oven", "printer-*"])
            return owner
        }
        let store = try server.openStore()
        let device = try #require(try await store.device(userID: owner.id))
        let token = try #require(try await store.apiTokens(deviceID: device.id).first)
        #expect(token.grants.scopes == [.activityUpdate] && token.grants.slugPatterns == ["oven", "printer-*"])
    }

    @Test(arguments: [
        (#""scopes": ["activity:write"]"#, "scopes", "\"activity:write\" is not a scope"),
        (#""scopes": []"#, "scopes", "at least one scope"),
        (#""scopes": "notifications""#, "scopes", "must be an array of strings"),
        (#""slugs": ["-oven"]"#, "slugs", "neither a slug"),
        (#""slugs": ["ov*en"]"#, "slugs", "neither a slug"),
        (#""slugs": [7]"#, "slugs", "must be an array of strings"),
    ])
    func scopesAndSlugsThatBreakARuleAre400NamingTheField(member: String, field: String, sentence: String) async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let response = try await client.post("/api/push/tokens", #"{"name": "x", \#(member)}"#, headers: owner.basic)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["code"] == "invalid_field" && json["field"] == .string(field))
            #expect(json["error"]?.stringValue?.contains(sentence) == true)
            #expect(try await client.listTokens(of: owner).isEmpty)  // nothing half-written
        }
    }

    @Test func postNotificationsNeedsTheNotificationsScope() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let activitiesOnly = try await client.createToken(for: owner, scopes: #"["activity:manage"]"#)
            let refused = try await client.sendAction(activitiesOnly.bearer)
            #expect(refused.status == .forbidden)
            let json = try refused.json()
            #expect(json["code"] == "insufficient_scope")
            #expect(json["error"]?.stringValue?.contains("notifications scope") == true)
            let notifier = try await client.createToken(for: owner, scopes: #"["notifications"]"#)
            #expect(try await client.sendAction(notifier.bearer).status == .created)
        }
    }

    @Test func healthIsOpenAndAnswersOk() async throws {
        try await TestServer().run { client in
            let response = try await client.execute(uri: "/health", method: .get)
            #expect(response.status == .ok)
            #expect(try response.json() == ["status": "ok"])
        }
    }

    @Test func authMeAnswersTheTokensDeviceWithTodaysUsage() async throws {
        let server = try TestServer(dailyLimit: 40)
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner, scopes: #"["activity:update", "notifications"]"#)
            #expect(try await client.sendAction(token.bearer).status == .created)
            let response = try await client.execute(uri: "/auth/me", method: .get, headers: token.bearer)
            #expect(response.status == .ok)
            let me = try response.json()
            #expect(Set(me.keys) == [
                "id", "nickname", "subscribed", "activity_count", "notifications_used", "notifications_limit", "quota_resets_at",
            ])
            #expect(me["nickname"] == .null && me["subscribed"] == true && me["activity_count"] == 0)
            #expect(me["notifications_used"] == 1 && me["notifications_limit"] == 40)
            #expect(me["id"]?.stringValue.flatMap(UUID.init(uuidString:)) != nil)
            #expect(me["id"]?.stringValue?.lowercased() != owner.userID.lowercased())  // never the USER_ID, a secret
        }
    }

    @Test func authMeRefusalsAreProblemDetailsWithPushWardsCodes() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let missing = try await client.execute(uri: "/auth/me", method: .get)
            #expect(missing.status == .unauthorized)
            #expect(try missing.problem()["code"] == "token.invalid")
            let wrong = try await client.execute(
                uri: "/auth/me", method: .get, headers: [.authorization: "Bearer hrd_" + String(repeating: "0", count: 64)])
            #expect(wrong.status == .unauthorized)
            #expect(try wrong.problem()["code"] == "token.invalid")
            let notifier = try await client.createToken(for: owner, scopes: #"["notifications"]"#)
            let forbidden = try await client.execute(uri: "/auth/me", method: .get, headers: notifier.bearer)
            #expect(forbidden.status == .forbidden)
            let problem = try forbidden.problem()
            #expect(problem["code"] == nil)  // PushWard's insufficient-scope answer has no code
            #expect(problem["detail"]?.stringValue?.hasPrefix("insufficient permissions") == true)
        }
    }

    @Test func pushToStartTokenIsKeptAtRegistrationAndReplacedOrKeptOnReregistration() async throws {
        let server = try TestServer()
        let startToken = String(repeating: "AB", count: 40)
        let owner = try await server.run { client in
            let response = try await client.post(
                "/api/push/register", #"{"token": "\#(Fixtures.apnsToken())", "live_activity_push_to_start_token": "\#(startToken)"}"#)
            #expect(response.status == .created)
            let body = try response.json()
            return Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue))
        }
        let store = try server.openStore()
        let id = try #require(try await store.device(userID: owner.id)).id
        #expect(try await store.device(id: id)?.pushToStartToken == startToken.lowercased())
        try await server.run { client throws in
            // Registered again without one: kept.
            #expect(try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(2))"}"#, headers: owner.basic).status == .ok)
            #expect(try await server.openStore().device(id: id)?.pushToStartToken == startToken.lowercased())
            // With a new one: replaced.
            let body = #"{"token": "\#(Fixtures.apnsToken(2))", "live_activity_push_to_start_token": "\#(Fixtures.apnsToken(9))"}"#
            #expect(try await client.post("/api/push/register", body, headers: owner.basic).status == .ok)
            #expect(try await server.openStore().device(id: id)?.pushToStartToken == Fixtures.apnsToken(9))  // no cache
        }
    }

    @Test(arguments: [
        (#""platform": "fcm", "token": "abc:def""#, "only for platform apns"),
        (#""token": "\#(Fixtures.apnsToken())""#, "must be an APNs token"),
    ])
    func aPushToStartTokenThatBreaksARuleIs400(member: String, sentence: String) async throws {
        try await TestServer().run { client in
            let response = try await client.post(
                "/api/push/register", #"{\#(member), "live_activity_push_to_start_token": "not-hex"}"#)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["field"] == "live_activity_push_to_start_token")
            #expect(json["error"]?.stringValue?.contains(sentence) == true)
        }
    }
}
