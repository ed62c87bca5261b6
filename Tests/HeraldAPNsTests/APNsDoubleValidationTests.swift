import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Testing

@Suite("APNs double validation (raw requests)")
struct APNsDoubleValidationTests {
    static let topic = APNsHarness.topic

    /// Starts a double with one key and a direct client on one connection.
    private func run(
        environment: PushEnvironment = .production, options: APNsDouble.Options = .init(),
        keyEnvironments: Set<PushEnvironment> = Set(PushEnvironment.allCases),
        _ body: (APNsDouble, DirectClient, TestKey, TestClock) async throws -> Void
    ) async throws {
        let key = TestKey()
        let clock = TestClock()
        let double = try await APNsDouble.start(
            environment: environment, keys: [.init(key, environments: keyEnvironments)], topics: [Self.topic],
            clock: clock, options: options)
        do {
            try await DirectClient.run(against: double) { client in try await body(double, client, key, clock) }
        } catch {
            try? await double.shutdown()
            throw error
        }
        try await double.shutdown()
    }

    private func replacing(_ name: String, with value: String?, in headers: [(String, String)]) -> [(String, String)] {
        var result = headers.filter { $0.0 != name }
        if let value { result.append((name, value)) }
        return result
    }

    @Test func validRequestIsAcceptedExactlyAsApple() async throws {
        try await run { double, client, key, clock in
            let headers = validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now()))
            let answer = try await client.send(headers: headers)
            #expect(answer.status == 200)
            #expect(answer.body.isEmpty)
            #expect(answer.headers["apns-id"] == [headers.first { $0.0 == "apns-id" }?.1 ?? "?"])
            #expect(answer.headers["apns-unique-id"].isEmpty)
            #expect(answer.headers["content-type"].isEmpty)
            #expect(double.acceptedPushes.count == 1)
        }
    }

    @Test func sandboxAddsUniqueIDAndGeneratesAnAPNsID() async throws {
        try await run(environment: .sandbox) { double, client, key, clock in
            let headers = replacing("apns-id", with: nil, in: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            let answer = try await client.send(headers: headers)
            #expect(answer.status == 200)
            let apnsID = try #require(answer.headers.first(name: "apns-id"))
            #expect(UUID(uuidString: apnsID) != nil && apnsID == apnsID.lowercased())
            #expect(answer.headers["apns-unique-id"].count == 1)
        }
    }

    @Test func badSignatureIsInvalidProviderToken() async throws {
        try await run { double, client, key, clock in
            let forged = try JWTFactory.make(
                header: ["alg": "ES256", "kid": .string(key.keyID)],
                claims: ["iss": .string(key.teamID), "iat": .int(Int(clock.now().timeIntervalSince1970))],
                signingKey: P256.Signing.PrivateKey())
            let answer = try await client.send(headers: validHeaders(jwt: forged))
            #expect(answer.status == 403)
            #expect(answer.reason == "InvalidProviderToken")
            #expect(answer.headers["content-type"] == ["application/json"])
            #expect(answer.headers["apns-id"].count == 1)
            #expect(double.requests.last?.providerTokenIsValid == false)
            #expect(double.requests.last?.providerToken?.keyID == key.keyID)
        }
    }

    /// The double remembers the tokens it has verified; a key registered later must still count.
    @Test func aTokenIsJudgedByTheKeysRegisteredWhenItArrives() async throws {
        try await run { double, client, key, clock in
            let late = TestKey(teamID: key.teamID)
            let jwt = try JWTFactory.valid(for: late, issuedAt: clock.now())
            #expect(try await client.send(headers: validHeaders(jwt: jwt)).reason == "InvalidProviderToken")
            double.register(.init(late))
            #expect(try await client.send(headers: validHeaders(jwt: jwt)).status == 200)
            #expect(try await client.send(headers: validHeaders(jwt: jwt)).status == 200)
            // The same Key ID now names another key: the token no longer verifies.
            double.register(.init(keyID: late.keyID, teamID: late.teamID, publicKey: P256.Signing.PrivateKey().publicKey))
            let refused = try await client.send(headers: validHeaders(jwt: jwt))
            #expect(refused.status == 403 && refused.reason == "InvalidProviderToken")
            #expect(double.requests.map(\.providerTokenIsValid) == [false, true, true, false])
        }
    }

    @Test func malformedTokensAreInvalid() async throws {
        try await run { _, client, key, clock in
            let iat = Int(clock.now().timeIntervalSince1970)
            let header: JSONObject = ["alg": "ES256", "kid": .string(key.keyID)]
            let tokens = [
                // iat as a string (the old APNSwift bug), an extra claim, a wrong alg, an unknown kid.
                try JWTFactory.make(header: header, claims: ["iss": .string(key.teamID), "iat": .string(String(iat))], signingKey: key.privateKey),
                try JWTFactory.make(header: header, claims: ["iss": .string(key.teamID), "iat": .int(iat), "kid": .string(key.keyID)], signingKey: key.privateKey),
                try JWTFactory.make(header: ["alg": "HS256", "kid": .string(key.keyID)], claims: ["iss": .string(key.teamID), "iat": .int(iat)], signingKey: key.privateKey),
                try JWTFactory.make(header: ["alg": "ES256", "kid": "UNKNOWN123"], claims: ["iss": .string(key.teamID), "iat": .int(iat)], signingKey: key.privateKey),
                try JWTFactory.make(header: header, claims: ["iss": "OTHERTEAM1", "iat": .int(iat)], signingKey: key.privateKey),
                try JWTFactory.make(header: header, claims: ["iss": .string(key.teamID), "iat": .int(iat + 600)], signingKey: key.privateKey),
                "not.a.jwt",
            ]
            for token in tokens {
                let answer = try await client.send(headers: validHeaders(jwt: token))
                #expect(answer.status == 403 && answer.reason == "InvalidProviderToken", "\(token)")
            }
        }
    }

    @Test func oldTokenIsExpiredProviderToken() async throws {
        try await run { _, client, key, clock in
            let jwt = try JWTFactory.valid(for: key, issuedAt: clock.now().addingTimeInterval(-3_601))
            let answer = try await client.send(headers: validHeaders(jwt: jwt))
            #expect(answer.status == 403)
            #expect(answer.reason == "ExpiredProviderToken")
        }
    }

    @Test func keyForTheOtherEnvironmentIsRefused() async throws {
        try await run(keyEnvironments: [.sandbox]) { _, client, key, clock in
            let answer = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            #expect(answer.status == 403)
            #expect(answer.reason == "BadEnvironmentKeyIdInToken")
        }
    }

    @Test func strictRuleRefusesANewTokenWithinTwentyMinutesOnOneConnection() async throws {
        try await run { double, client, key, clock in
            let first = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            #expect(first.status == 200)
            clock.advance(by: 19 * 60)
            let second = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            #expect(second.status == 429)
            #expect(second.reason == "TooManyProviderTokenUpdates")
            clock.advance(by: 60)
            let third = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            #expect(third.status == 200)
            #expect(Set(double.requests.map(\.connectionID)).count == 1)
        }
    }

    @Test func lenientRuleComparesIssueTimes() async throws {
        var options = APNsDouble.Options()
        options.tokenUpdateRule = .lenient
        try await run(options: options) { _, client, key, clock in
            let start = clock.now()
            let first = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: start)))
            #expect(first.status == 200)
            let soon = try await client.send(
                headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: start.addingTimeInterval(-5 * 60))))
            #expect(soon.reason == "TooManyProviderTokenUpdates")
            // Minted 20 minutes after the current one: fine even though it arrives at once.
            clock.advance(by: 20 * 60)
            let later = try await client.send(
                headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: start.addingTimeInterval(20 * 60))))
            #expect(later.status == 200)
        }
    }

    @Test func requestChecksAnswerApplesReasons() async throws {
        try await run { _, client, key, clock in
            let good = validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now()))
            let token = Fixtures.apnsToken()
            let cases: [(String, HTTPMethod, String, [(String, String)], Data?, Int, String)] = [
                ("method", .GET, "/3/device/\(token)", good, nil, 405, "MethodNotAllowed"),
                ("no token", .POST, "/3/device/", good, nil, 400, "MissingDeviceToken"),
                ("path", .POST, "/4/device/\(token)", good, nil, 404, "BadPath"),
                ("duplicate", .POST, "/3/device/\(token)", good + [("apns-topic", Self.topic)], nil, 400, "DuplicateHeaders"),
                ("apns-id", .POST, "/3/device/\(token)", replacing("apns-id", with: "42", in: good), nil, 400, "BadMessageId"),
                ("no auth", .POST, "/3/device/\(token)", replacing("authorization", with: nil, in: good), nil, 403, "MissingProviderToken"),
                ("no topic", .POST, "/3/device/\(token)", replacing("apns-topic", with: nil, in: good), nil, 400, "MissingTopic"),
                ("topic", .POST, "/3/device/\(token)", replacing("apns-topic", with: "com.other.app", in: good), nil, 400, "TopicDisallowed"),
                ("push type", .POST, "/3/device/\(token)", replacing("apns-push-type", with: "banner", in: good), nil, 400, "InvalidPushType"),
                ("voip topic", .POST, "/3/device/\(token)", replacing("apns-push-type", with: "voip", in: good), nil, 400, "InvalidPushType"),
                ("priority", .POST, "/3/device/\(token)", replacing("apns-priority", with: "7", in: good), nil, 400, "BadPriority"),
                ("background 10", .POST, "/3/device/\(token)", replacing("apns-push-type", with: "background", in: good), nil, 400, "BadPriority"),
                ("expiration", .POST, "/3/device/\(token)", good + [("apns-expiration", "soon")], nil, 400, "BadExpirationDate"),
                ("collapse", .POST, "/3/device/\(token)", good + [("apns-collapse-id", String(repeating: "c", count: 65))], nil, 400, "BadCollapseId"),
                ("hex", .POST, "/3/device/\(String(repeating: "zz", count: 32))", good, nil, 400, "BadDeviceToken"),
                ("short", .POST, "/3/device/abcd", good, nil, 400, "BadDeviceToken"),
                ("empty", .POST, "/3/device/\(token)", good, Data(), 400, "PayloadEmpty"),
                ("not json", .POST, "/3/device/\(token)", good, Data("hello".utf8), 400, "PayloadEmpty"),
                ("large", .POST, "/3/device/\(token)", good, Data(repeating: 0x20, count: 4_097), 413, "PayloadTooLarge"),
            ]
            for (name, method, path, headers, body, status, reason) in cases {
                let answer = try await client.send(
                    method: method, path: path, headers: headers, body: body ?? Data(#"{"aps":{"alert":"Hi"}}"#.utf8))
                #expect(answer.status == status, "\(name)")
                #expect(answer.reason == reason, "\(name)")
            }
            // A 64-byte collapse id is fine.
            let ok = try await client.send(headers: good + [("apns-collapse-id", String(repeating: "c", count: 64))])
            #expect(ok.status == 200)
        }
    }

    @Test func unregisteredTokenCarriesTheTimestampInMilliseconds() async throws {
        try await run { double, client, key, clock in
            let token = Fixtures.apnsToken(7)
            double.markUnregistered(token, since: Date(timeIntervalSince1970: 1_700_000_000.5))
            let jwt = try JWTFactory.valid(for: key, issuedAt: clock.now())
            let answer = try await client.send(path: "/3/device/\(token)", headers: validHeaders(jwt: jwt))
            #expect(answer.status == 410)
            #expect(answer.json == ["reason": "Unregistered", "timestamp": .int(1_700_000_000_500)])
            double.unmark(token)
            let again = try await client.send(path: "/3/device/\(token)", headers: validHeaders(jwt: jwt))
            #expect(again.status == 200)
        }
    }

    @Test func perDeviceRateLimitAnswersTooManyRequests() async throws {
        var options = APNsDouble.Options()
        options.perDeviceTokenLimit = .init(requests: 2, perSeconds: 10)
        try await run(options: options) { _, client, key, clock in
            let headers = validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now()))
            let statuses = try await [1, 2, 3].asyncMap { _ in try await client.send(headers: headers).status }
            #expect(statuses == [200, 200, 429])
            clock.advance(by: 10)
            #expect(try await client.send(headers: headers).status == 200)
        }
    }

    @Test func maxConcurrentStreamsIsRaisedOnlyAfterAValidToken() async throws {
        try await run { double, client, key, clock in
            let bad = try await client.send(headers: validHeaders(jwt: "not.a.jwt"))
            #expect(bad.reason == "InvalidProviderToken")
            let settingsAfterBad = double.connectionEvents.filter { if case .settingsSent = $0.kind { true } else { false } }
            #expect(settingsAfterBad.map(\.kind) == [.settingsSent(maxConcurrentStreams: 1)])
            _ = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: clock.now())))
            let settings = double.connectionEvents.filter { if case .settingsSent = $0.kind { true } else { false } }
            #expect(settings.map(\.kind) == [.settingsSent(maxConcurrentStreams: 1), .settingsSent(maxConcurrentStreams: 1_000)])
        }
    }

    @Test func certificateIsAlsoValidForLocalhost() async throws {
        let key = TestKey()
        let double = try await APNsDouble.start(keys: [.init(key)], topics: [Self.topic])
        do {
            try await DirectClient.run(against: double, baseURL: double.localhostURL) { client in
                let answer = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: Date())))
                #expect(answer.status == 200)
            }
        } catch {
            try? await double.shutdown()
            throw error
        }
        try await double.shutdown()
    }

    @Test func clientsWithoutH2AreRefused() async throws {
        let key = TestKey()
        let double = try await APNsDouble.start(keys: [.init(key)], topics: [Self.topic])
        do {
            try await DirectClient.run(against: double, httpVersion: .http1Only) { client in
                await #expect(throws: (any Error).self) {
                    _ = try await client.send(headers: validHeaders(jwt: try JWTFactory.valid(for: key, issuedAt: Date())))
                }
            }
            #expect(double.requests.isEmpty)
        } catch {
            try? await double.shutdown()
            throw error
        }
        try await double.shutdown()
    }
}

extension Array {
    /// Maps sequentially with an async transform.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
