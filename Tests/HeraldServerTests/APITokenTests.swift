import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// An API token as `POST /api/push/tokens` returned it.
struct CreatedToken: Sendable {
    var id: String
    var name: String
    var token: String

    var bearer: HTTPFields { [.authorization: "Bearer \(token)"] }
}

extension TestClientProtocol {
    /// Creates an API token for `owner` and returns it.
    func createToken(for owner: Registration, name: String = "Home Assistant") async throws -> CreatedToken {
        let response = try await post("/api/push/tokens", #"{"name": "\#(name)"}"#, headers: owner.basic)
        #expect(response.status == .created)
        let json = try response.json()
        return CreatedToken(
            id: try #require(json["id"]?.stringValue), name: try #require(json["name"]?.stringValue),
            token: try #require(json["token"]?.stringValue))
    }

    /// `GET /api/push/tokens` as `owner`.
    func listTokens(of owner: Registration) async throws -> [JSONObject] {
        let response = try await execute(uri: "/api/push/tokens", method: .get, headers: owner.basic)
        #expect(response.status == .ok)
        let tokens = try #require(try response.json()["tokens"])
        guard case .array(let elements) = tokens else { throw TestFailure("tokens is not an array") }
        return try elements.map { try #require($0.objectValue) }
    }

    /// A minimal valid `POST /notifications`.
    func sendAction(_ headers: HTTPFields, body: String = #"{"title": "Door", "body": "Open"}"#) async throws -> TestResponse {
        try await post("/notifications", body, headers: headers)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite("API tokens")
struct APITokenTests {
    @Test func lifecycleCreateListUseRevoke() async throws {
        let server = try TestServer()
        let (owner, token) = try await server.run { client in
            let owner = try await client.register()
            let response = try await client.post("/api/push/tokens", #"{"name": "  Home Assistant "}"#, headers: owner.basic)
            #expect(response.status == .created)
            #expect(response.headers[.cacheControl] == "no-store")
            let json = try response.json()
            #expect(Set(json.keys) == ["id", "name", "token", "created_at", "scopes", "slugs"])
            #expect(json["scopes"] == ["activity:manage", "activity:update", "notifications"])
            #expect(json["slugs"] == [])
            #expect(json["name"] == "Home Assistant")
            #expect(json["created_at"] == .string(server.clock.now().iso8601WithMilliseconds))
            let text = try #require(json["token"]?.stringValue)
            #expect(text.hasPrefix("hrd_") && text.count == 68 && Secrets.isHex(String(text.dropFirst(4))))
            #expect(text == text.lowercased())
            let token = CreatedToken(id: try #require(json["id"]?.stringValue), name: "Home Assistant", token: text)

            // Listed without the token text, never used yet.
            let listResponse = try await client.execute(uri: "/api/push/tokens", method: .get, headers: owner.basic)
            #expect(!String(decoding: Data(listResponse.body.readableBytesView), as: UTF8.self).contains(text))
            #expect(try await client.listTokens(of: owner) == [
                [
                    "id": .string(token.id), "name": "Home Assistant", "created_at": json["created_at"]!, "last_used_at": .null,
                    "scopes": ["activity:manage", "activity:update", "notifications"], "slugs": [],
                ]
            ])

            // Used: last_used_at is the time of use.
            server.clock.advance(by: 90)
            #expect(try await client.sendAction(token.bearer).status == .created)
            #expect(try await client.listTokens(of: owner).first?["last_used_at"] == .string(server.clock.now().iso8601WithMilliseconds))

            // Revoked: 401 from then on, gone from the list, a second revocation finds nothing.
            let revoke = try await client.execute(uri: "/api/push/tokens/\(token.id)", method: .delete, headers: owner.basic)
            #expect(revoke.status == .noContent)
            let refused = try await client.sendAction(token.bearer)
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            let refusal = try refused.json()
            #expect(refusal["code"] == "invalid_token")
            #expect(refusal["error"]?.stringValue?.contains("revoked") == true)
            #expect(try await client.listTokens(of: owner).isEmpty)
            let again = try await client.execute(uri: "/api/push/tokens/\(token.id)", method: .delete, headers: owner.basic)
            #expect(again.status == .notFound)
            #expect(try again.json()["code"] == "not_found")
            return (owner, token)
        }
        // Only the hash is stored.
        let store = try server.openStore()
        let device = try #require(try await store.device(userIDHash: Secrets.hash(owner.userID)))
        let stored = try await store.apiTokens(deviceID: device.id)
        #expect(stored.map(\.tokenHash) == [Secrets.hash(token.token)])
        #expect(stored.first?.isRevoked == true)
        let database = try String(contentsOfFile: server.databasePath, encoding: .isoLatin1)
            + ((try? String(contentsOfFile: server.databasePath + "-wal", encoding: .isoLatin1)) ?? "")
        #expect(!database.contains(token.token))
    }

    @Test func severalTokensPerDeviceRevokedByName() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let first = try await client.createToken(for: owner, name: "Home Assistant")
            server.clock.advance(by: 1)  // listed oldest first
            let second = try await client.createToken(for: owner, name: "CI/deploy 2")
            #expect(first.token != second.token)
            #expect(try await client.listTokens(of: owner).compactMap { $0["name"]?.stringValue } == ["Home Assistant", "CI/deploy 2"])

            let taken = try await client.post("/api/push/tokens", #"{"name": "Home Assistant"}"#, headers: owner.basic)
            #expect(taken.status == .conflict)
            #expect(try taken.json()["code"] == "token_name_taken")

            // By name, percent-encoded in the path.
            let revoke = try await client.execute(uri: "/api/push/tokens/CI%2Fdeploy%202", method: .delete, headers: owner.basic)
            #expect(revoke.status == .noContent)
            #expect(try await client.sendAction(second.bearer).status == .unauthorized)
            #expect(try await client.sendAction(first.bearer).status == .created)
            let unknown = try await client.execute(uri: "/api/push/tokens/nothing", method: .delete, headers: owner.basic)
            #expect(unknown.status == .notFound)

            // The name of a revoked token can be used again.
            _ = try await client.createToken(for: owner, name: "CI/deploy 2")
        }
    }

    @Test(arguments: [
        (#"{}"#, "name"),
        (#"{"name": ""}"#, "name"),
        (#"{"name": "   "}"#, "name"),
        (#"{"name": 7}"#, "name"),
        (#"{"name": "\#(String(repeating: "n", count: 65))"}"#, "name"),
        (#"{"name": "tab\there"}"#, "name"),
        (#"{"name": "#, "$"),
    ])
    func invalidNamesAreA400(body: String, field: String) async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let response = try await client.post("/api/push/tokens", body, headers: owner.basic)
            #expect(response.status == .badRequest, "\(body)")
            #expect(try response.json()["field"] == .string(field), "\(body)")
        }
    }

    @Test func managementNeedsTheOwnersBasicCredentials() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let wrongSecret = Registration(userID: owner.userID, secret: Secrets.random256BitHex())
            let unknownUser = Registration(userID: Secrets.random256BitHex(), secret: owner.secret)
            let requests: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/api/push/tokens", #"{"name": "x"}"#), (.get, "/api/push/tokens", nil),
                (.delete, "/api/push/tokens/\(token.id)", nil),
            ]
            for (method, uri, body) in requests {
                server.clock.advance(by: 60)  // a fresh window of the failure limiter for each round of four failures
                func call(_ headers: HTTPFields) async throws -> TestResponse {
                    if let body { return try await client.post(uri, body, headers: headers, method: method) }
                    return try await client.execute(uri: uri, method: method, headers: headers)
                }
                let missing = try await call([:])
                #expect(missing.status == .unauthorized, "\(method) \(uri)")
                #expect(missing.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
                #expect(try missing.json()["code"] == "credentials_required")

                let wrong = try await call(wrongSecret.basic)
                #expect(wrong.status == .forbidden, "\(method) \(uri)")
                #expect(try wrong.json()["field"] == "device_secret")

                #expect(try await call(unknownUser.basic).status == .notFound, "\(method) \(uri)")
                // An API token is not an owner credential.
                #expect(try await call(token.bearer).status == .unauthorized, "\(method) \(uri)")
            }
            // Nothing was revoked by the refused requests.
            #expect(try await client.sendAction(token.bearer).status == .created)
        }
    }

    @Test func aTokenOnlySendsToItsOwnDevice() async throws {
        let server = try TestServer()
        let (ids, deviceA) = try await server.run { client in
            let ownerA = try await client.register(token: Fixtures.apnsToken(1))
            let ownerB = try await client.register(token: Fixtures.apnsToken(2))
            let tokenA = try await client.createToken(for: ownerA, name: "shared name")
            let tokenB = try await client.createToken(for: ownerB, name: "shared name")

            // B's owner sees only B's token and cannot revoke A's.
            #expect(try await client.listTokens(of: ownerB).map { $0["id"] } == [.string(tokenB.id)])
            let foreign = try await client.execute(uri: "/api/push/tokens/\(tokenA.id)", method: .delete, headers: ownerB.basic)
            #expect(foreign.status == .notFound)

            // A user_id in the body does not redirect the notification: it is not a member (400 unknown_field).
            var ids: [String] = []
            let response = try await client.sendAction(tokenA.bearer, body: #"{"title": "T", "body": "B"}"#)
            #expect(response.status == .created)
            ids.append(try #require(try response.json()["id"]?.stringValue))
            let redirected = try await client.sendAction(tokenA.bearer, body: #"{"title": "T", "body": "B", "user_id": "\#(ownerB.userID)"}"#)
            #expect(redirected.status == .badRequest)
            #expect(try redirected.json()["code"] == "unknown_field" && redirected.json()["field"] == "user_id")
            // The status endpoint shows them to A's owner only.
            for id in ids {
                let byA = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: ownerA.basic)
                #expect(byA.status == .ok)
                let byB = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: ownerB.basic)
                #expect(byB.status == .notFound)
            }
            return (ids, ownerA)
        }
        let store = try server.openStore()
        let device = try #require(try await store.device(userIDHash: Secrets.hash(deviceA.userID)))
        for id in ids {
            #expect(try await store.notification(id: try #require(UUID(uuidString: id)))?.deviceID == device.id)
        }
    }

    @Test func missingMalformedAndUnknownBearerTokensAre401() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let cases: [(HTTPFields, String)] = [
                ([:], "token_required"),
                ([.authorization: "Bearer"], "token_required"),
                (owner.basic, "token_required"),
                (owner.bearer, "invalid_token"),  // a USER_ID is not an API token
                ([.authorization: "Bearer hrd_" + Secrets.random256BitHex()], "invalid_token"),
                ([.authorization: "Bearer hrd_" + Secrets.random256BitHex().uppercased()], "invalid_token"),
                ([.authorization: "Bearer hlk_YOUR_TOKEN"], "invalid_token"),
            ]
            for (headers, code) in cases {
                let response = try await client.sendAction(headers)
                #expect(response.status == .unauthorized, "\(headers)")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix(#"Bearer realm="herald""#) == true, "\(headers)")
                let json = try response.json()
                #expect(json["code"] == .string(code), "\(headers)")
                #expect(json["error"]?.stringValue?.isEmpty == false)
            }
        }
    }

    @Test func repeatedFailuresFromOneAddressAreSlowedDown() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let wrong: HTTPFields = [.authorization: "Bearer hrd_" + Secrets.random256BitHex()]
            for attempt in 1...10 {
                #expect(try await client.sendAction(wrong).status == .unauthorized, "attempt \(attempt)")
            }
            // The 11th request within the minute is refused unless its credential is one Herald issued or saw
            // authenticate: the valid token and the owner's credentials still work.
            let refused = try await client.sendAction(wrong)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "60")
            #expect(try refused.json()["code"] == "too_many_auth_failures")
            #expect(try await client.sendAction(token.bearer).status == .created)
            let management = try await client.execute(uri: "/api/push/tokens", method: .get, headers: owner.basic)
            #expect(management.status == .ok)

            server.clock.advance(by: 45)
            #expect(try await client.sendAction(wrong).headers[.retryAfter] == "15")

            // The window is over: the valid token works again.
            server.clock.advance(by: 15)
            #expect(try await client.sendAction(token.bearer).status == .created)
            #expect(try await client.sendAction(wrong).status == .unauthorized)
        }
    }

    @Test func failedOwnerAuthenticationsCountToo() async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let wrongSecret = Registration(userID: owner.userID, secret: Secrets.random256BitHex())
            // Requests without credentials guess nothing: 401, not counted.
            for _ in 1...15 {
                #expect(try await client.execute(uri: "/api/push/tokens", method: .get).status == .unauthorized)
            }
            for _ in 1...10 {
                #expect(try await client.execute(uri: "/api/push/tokens", method: .get, headers: wrongSecret.basic).status == .forbidden)
            }
            #expect(try await client.sendAction([.authorization: "Bearer hrd_" + Secrets.random256BitHex()]).status == .tooManyRequests)
            #expect(try await client.execute(uri: "/api/push/tokens", method: .get, headers: wrongSecret.basic).status == .tooManyRequests)
            // Credentials Herald issued still work.
            #expect(try await client.sendAction(token.bearer).status == .created)
            #expect(try await client.execute(uri: "/api/push/tokens", method: .get, headers: owner.basic).status == .ok)
            // Requests without credentials are answered 401 even while the address is locked out.
            #expect(try await client.execute(uri: "/api/push/tokens", method: .get).status == .unauthorized)
            #expect(try await client.sendAction([:]).status == .unauthorized)
            #expect(try await client.notify(owner.userID).status == .created)
        }
    }
}
