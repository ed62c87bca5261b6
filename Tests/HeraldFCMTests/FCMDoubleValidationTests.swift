import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing
import _CryptoExtras

@Suite("FCM double (raw requests)")
struct FCMDoubleValidationTests {
    static let project = "herald-test"

    /// Starts a double with the suite's key and a client on one connection.
    func run(
        accessTokenLifetime: TimeInterval = 3_600, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        _ body: (FCMDouble, FCMClient, TestClock) async throws -> Void
    ) async throws {
        let clock = TestClock()
        let account = FCMTestServiceAccount(privateKey: TestRSAKeys.first, projectID: Self.project)
        let double = try await FCMDouble.start(
            projectID: Self.project, serviceAccount: account, clock: clock, accessTokenLifetime: accessTokenLifetime)
        do {
            try await FCMClient.run(against: double, httpVersion: httpVersion) { client in try await body(double, client, clock) }
        } catch {
            try? await double.shutdown()
            throw error
        }
        try await double.shutdown()
    }

    /// A message to `token` with a little of everything.
    func message(to token: String = registrationToken()) -> JSONObject {
        [
            "token": .string(token), "data": ["kind": "doorbell", "camera": "front"],
            "notification": ["title": "Someone at the door", "body": "Front camera"],
            "android": ["priority": "HIGH", "ttl": "3.5s", "collapse_key": "doorbell"],
        ]
    }

    /// FCM's error body with these parts.
    func errorBody(_ code: Int, _ status: String, _ message: String, details: [JSONValue]) -> JSONObject {
        var error: JSONObject = ["code": .int(code), "status": .string(status), "message": .string(message)]
        if !details.isEmpty { error["details"] = .array(details) }
        return ["error": .object(error)]
    }

    func fcmError(_ code: String) -> JSONValue {
        ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]
    }

    func badRequest(_ field: String?, _ description: String) -> JSONValue {
        var violation: JSONObject = ["description": .string(description)]
        if let field { violation["field"] = .string(field) }
        return ["@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [.object(violation)]]
    }

    // MARK: Token endpoint

    @Test func tokenExchangeThenSendIsRecorded() async throws {
        try await run { double, client, clock in
            let assertion = try double.serviceAccount.assertion(tokenURI: double.tokenURI, issuedAt: clock.now())
            let granted = try await client.exchange(assertion)
            #expect(granted.status == 200)
            #expect(granted.headers["content-type"] == ["application/json; charset=utf-8"])
            let accessToken = try #require(granted.json?["access_token"]?.stringValue)
            #expect(accessToken.hasPrefix("ya29."))
            #expect(granted.json?["expires_in"] == 3_600)
            #expect(granted.json?["token_type"] == "Bearer")

            let sent = try await client.send(message(), accessToken: accessToken)
            #expect(sent.status == 200)
            #expect(sent.headers["content-type"] == ["application/json; charset=UTF-8"])
            let name = try #require(sent.json?["name"]?.stringValue)
            let id = name.dropFirst("projects/\(Self.project)/messages/".count)
            #expect(name.hasPrefix("projects/\(Self.project)/messages/") && !id.isEmpty && id.allSatisfy(\.isNumber))

            let accepted = try #require(double.acceptedMessages.first)
            #expect(double.acceptedMessages.count == 1)
            #expect(accepted.name == name)
            #expect(accepted.target == .token(registrationToken()))
            #expect(accepted.message == message())
            #expect(accepted.data == ["kind": "doorbell", "camera": "front"])
            #expect(accepted.accessToken == accessToken)
            #expect(accepted.connectionID == double.requests.last?.connectionID)
            #expect(double.requests.map(\.status) == [200])
            #expect(double.requests.last?.messageName == name)
            let exchange = try #require(double.tokenRequests.first)
            #expect(exchange.outcome == .granted(accessToken: accessToken, expiresIn: 3_600))
            #expect(exchange.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
            #expect(exchange.assertionClaims?["iss"] == .string(double.serviceAccount.clientEmail))
            #expect(double.counters.tokensIssued == 1 && double.counters.sendsAccepted == 1)
            #expect(double.counters.connections == 1)
        }
    }

    @Test func serviceAccountFileIsWhatTheConsoleGives() async throws {
        try await run { double, _, _ in
            let path = try double.writeServiceAccount()
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text == double.serviceAccountJSON)
            let file = try #require(try JSONValue.decode(Data(text.utf8)).objectValue)
            #expect(
                Set(file.keys) == [
                    "type", "project_id", "private_key_id", "private_key", "client_email", "client_id", "auth_uri",
                    "token_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain",
                ])
            #expect(file["type"] == "service_account")
            #expect(file["project_id"] == .string(Self.project))
            #expect(file["token_uri"] == .string(double.tokenURI))
            #expect(file["client_email"] == .string(double.serviceAccount.clientEmail))
            let pem = try #require(file["private_key"]?.stringValue)
            #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n") && pem.hasSuffix("-----END PRIVATE KEY-----\n"))
            let key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
            #expect(key.publicKey.derRepresentation == double.serviceAccount.publicKey.derRepresentation)
            let keyID = try #require(file["private_key_id"]?.stringValue)
            #expect(keyID.count == 40 && keyID.allSatisfy(\.isHexDigit))
        }
    }

    @Test func refusedAssertionsAnswerGooglesOAuthErrors() async throws {
        try await run { double, client, clock in
            let account = double.serviceAccount
            let forger = FCMTestServiceAccount(
                privateKey: TestRSAKeys.second, projectID: Self.project, clientEmail: account.clientEmail,
                privateKeyID: account.privateKeyID)
            let iat = Int(clock.now().timeIntervalSince1970)
            let header: JSONObject = ["alg": "RS256", "typ": "JWT", "kid": .string(account.privateKeyID)]
            func claims(_ changes: JSONObject) -> JSONObject {
                var claims: JSONObject = [
                    "iss": .string(account.clientEmail), "scope": .string(FCMDouble.messagingScope),
                    "aud": .string(double.tokenURI), "iat": .int(iat), "exp": .int(iat + 3_600),
                ]
                for (name, value) in changes { claims[name] = value == .null ? nil : value }
                return claims
            }
            let shortLived =
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                + "Check your iat and exp values in the JWT claim."
            let cases: [(String, String, String, String)] = [
                ("signed by another key", try forger.signedJWT(header: header, claims: claims([:])), "invalid_grant", "Invalid JWT Signature."),
                ("alg HS256", try account.signedJWT(header: ["alg": "HS256", "typ": "JWT"], claims: claims([:])), "invalid_grant", "Invalid JWT Signature."),
                ("other kid", try account.signedJWT(header: ["alg": "RS256", "kid": "0123"], claims: claims([:])), "invalid_grant", "Invalid JWT Signature."),
                ("not a JWT", "not.a.jwt", "invalid_grant", "Invalid JWT Signature."),
                (
                    "wrong aud", try account.signedJWT(header: header, claims: claims(["aud": "https://oauth2.googleapis.com/token"])),
                    "invalid_grant", "Invalid JWT: Failed audience check. The right audience is \(double.tokenURI)"
                ),
                (
                    "wrong iss", try account.signedJWT(header: header, claims: claims(["iss": "someone@other.iam.gserviceaccount.com"])),
                    "invalid_grant", "Invalid grant: account not found"
                ),
                ("iss not an email", try account.signedJWT(header: header, claims: claims(["iss": "herald"])), "invalid_grant", "Not a valid email."),
                ("missing scope", try account.signedJWT(header: header, claims: claims(["scope": .null])), "invalid_scope", "Empty or missing scope not allowed."),
                ("empty scope", try account.signedJWT(header: header, claims: claims(["scope": ""])), "invalid_scope", "Empty or missing scope not allowed."),
                (
                    "unknown scope", try account.signedJWT(header: header, claims: claims(["scope": "firebase.messaging"])),
                    "invalid_scope", "Invalid OAuth scope or ID token audience provided."
                ),
                ("exp - iat > 3600", try account.signedJWT(header: header, claims: claims(["exp": .int(iat + 3_601)])), "invalid_grant", shortLived),
                (
                    "expired", try account.signedJWT(header: header, claims: claims(["iat": .int(iat - 3_600), "exp": .int(iat)])),
                    "invalid_grant", shortLived
                ),
                (
                    "issued in the future", try account.signedJWT(header: header, claims: claims(["iat": .int(iat + 61), "exp": .int(iat + 600)])),
                    "invalid_grant", shortLived
                ),
                ("no exp", try account.signedJWT(header: header, claims: claims(["exp": .null])), "invalid_grant", shortLived),
            ]
            for (name, assertion, error, description) in cases {
                let answer = try await client.exchange(assertion)
                #expect(answer.status == 400, "\(name)")
                #expect(answer.json == ["error": .string(error), "error_description": .string(description)], "\(name)")
            }
            let badGrant = try await client.exchange(
                try account.assertion(tokenURI: double.tokenURI, issuedAt: clock.now()), grantType: "client_credentials")
            #expect(badGrant.json == ["error": "unsupported_grant_type", "error_description": "Invalid grant_type: client_credentials"])
            let noAssertion = try await client.request(
                path: "/token", headers: [("content-type", "application/x-www-form-urlencoded")],
                body: Data("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer".utf8))
            #expect(noAssertion.json == ["error": "invalid_request", "error_description": "Missing required parameter: assertion"])

            // Within the 60-second skew, and at the limit of an hour: granted.
            let skewed = try account.signedJWT(header: header, claims: claims(["iat": .int(iat + 60), "exp": .int(iat + 3_660)]))
            #expect(try await client.exchange(skewed).status == 200)
            #expect(double.tokenRequests.count == cases.count + 3)
            #expect(double.tokenRequests.filter { $0.accessToken != nil }.count == 1)
            #expect(double.counters.tokensIssued == 1)
        }
    }

    @Test func tokenEndpointFailuresCanBeInjected() async throws {
        try await run { double, client, clock in
            double.failNextTokenRequests(2, status: 503)
            let assertion = try double.serviceAccount.assertion(tokenURI: double.tokenURI, issuedAt: clock.now())
            let first = try await client.exchange(assertion)
            #expect(first.status == 503)
            #expect(first.json?["error"] == "temporarily_unavailable")
            // A refused assertion does not use up an injected failure.
            #expect(try await client.exchange("not.a.jwt").status == 400)
            #expect(try await client.exchange(assertion).status == 503)
            #expect(try await client.exchange(assertion).status == 200)
            #expect(double.tokenRequests.map(\.status) == [503, 400, 503, 200])
        }
    }

    // MARK: Send endpoint

    @Test func wrongProjectAndUnroutedRequests() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            let other = try await client.send(message(), accessToken: accessToken, project: "someone-else")
            #expect(
                other.json
                    == errorBody(
                        403, "PERMISSION_DENIED",
                        "Permission 'cloudmessaging.messages.create' denied on resource "
                            + "'//cloudresourcemanager.googleapis.com/projects/someone-else' (or it may not exist).",
                        details: []))
            // Credentials are judged before the project.
            #expect(try await client.send(message(), accessToken: nil, project: "someone-else").status == 401)
            let headers = [("authorization", "Bearer \(accessToken)")]
            let get = try await client.request(.GET, path: "/v1/projects/\(Self.project)/messages:send", headers: headers, body: Data())
            #expect(get.status == 404)
            #expect(get.headers["content-type"] == ["text/html; charset=UTF-8"])
            let path = try await client.request(path: "/v1/projects/\(Self.project)/messages:sendAll", headers: headers, body: Data("{}".utf8))
            #expect(path.status == 404)
            #expect(double.requests.map(\.status) == [403, 401, 404, 404])
            #expect(double.acceptedMessages.isEmpty)
        }
    }

    @Test func nonStringDataValueNamesTheEntryAsGoogleDoes() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            let answer = try await client.send(["token": .string(registrationToken()), "data": ["count": 12]], accessToken: accessToken)
            let text = "Invalid value at 'message.data[0].value' (TYPE_STRING), 12"
            #expect(answer.status == 400)
            #expect(answer.json == errorBody(400, "INVALID_ARGUMENT", text, details: [badRequest("message.data[0].value", text)]))
            // The index counts the entries in (sorted) order.
            let second = try await client.send(
                ["token": .string(registrationToken()), "data": ["a": "fine", "b": true]], accessToken: accessToken)
            #expect(second.message == "Invalid value at 'message.data[1].value' (TYPE_STRING), true")
            #expect(double.requests.last?.error?.status == "INVALID_ARGUMENT")
            #expect(double.requests.last?.errorCode == nil)
        }
    }

    @Test func sendChecksAnswerFCMsErrors() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            let token: JSONValue = .string(registrationToken())
            let recipient = "Recipient of the message is not set."
            let cases: [(String, JSONObject, JSONObject)] = [
                ("no target", ["data": ["a": "b"]], errorBody(400, "INVALID_ARGUMENT", recipient, details: [fcmError("INVALID_ARGUMENT"), badRequest("message", recipient)])),
                (
                    "two targets", ["token": token, "topic": "news"],
                    errorBody(
                        400, "INVALID_ARGUMENT", "Invalid value (oneof), oneof field 'target' is already set. Cannot set 'topic'",
                        details: [badRequest("message", "Invalid value (oneof), oneof field 'target' is already set. Cannot set 'topic'")])
                ),
                ("reserved key", ["token": token, "data": ["from": "alice"]], errorBody(400, "INVALID_ARGUMENT", "Invalid data payload key: from", details: [fcmError("INVALID_ARGUMENT")])),
                (
                    "reserved prefix", ["token": token, "data": ["google.c.a": "x"]],
                    errorBody(400, "INVALID_ARGUMENT", "Invalid data payload key: google.c.a", details: [fcmError("INVALID_ARGUMENT")])
                ),
                (
                    "bad priority", ["token": token, "android": ["priority": "URGENT"]],
                    errorBody(
                        400, "INVALID_ARGUMENT",
                        #"Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "URGENT""#,
                        details: [
                            badRequest(
                                "message.android.priority",
                                #"Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "URGENT""#)
                        ])
                ),
                ("too big", ["token": token, "data": ["blob": .string(String(repeating: "x", count: 4_100))]], errorBody(400, "INVALID_ARGUMENT", "Message is too big", details: [fcmError("INVALID_ARGUMENT")])),
                (
                    "too big for a topic", ["topic": "news", "data": ["blob": .string(String(repeating: "x", count: 2_050))]],
                    errorBody(400, "INVALID_ARGUMENT", "Message is too big", details: [fcmError("INVALID_ARGUMENT")])
                ),
                (
                    "invalid token", ["token": "not a token"],
                    errorBody(
                        400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                        details: [fcmError("INVALID_ARGUMENT"), badRequest("message.token", "The registration token is not a valid FCM registration token")])
                ),
                (
                    "unknown field", ["token": token, "priority": "high"],
                    errorBody(
                        400, "INVALID_ARGUMENT", #"Invalid JSON payload received. Unknown name "priority" at 'message': Cannot find field."#,
                        details: [badRequest("message", #"Invalid JSON payload received. Unknown name "priority" at 'message': Cannot find field."#)])
                ),
            ]
            for (name, message, expected) in cases {
                let answer = try await client.send(message, accessToken: accessToken)
                #expect(answer.status == 400, "\(name)")
                #expect(answer.json == expected, "\(name)")
            }
            let ttlCases: [(JSONValue, String)] = [
                ("3.5", #"Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "3.5""#),
                (60, "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), 60"),
                ("2419201s", "Invalid value at 'message.android.ttl': the TTL must be between 0 and 2419200 seconds (4 weeks)."),
                ("-1s", "Invalid value at 'message.android.ttl': the TTL must be between 0 and 2419200 seconds (4 weeks)."),
            ]
            for (ttl, text) in ttlCases {
                let answer = try await client.send(["token": token, "android": ["ttl": ttl]], accessToken: accessToken)
                #expect(answer.status == 400 && answer.message == text, "\(ttl)")
            }
            let notJSON = try await client.send(body: Data("hello".utf8), accessToken: accessToken)
            #expect(notJSON.status == 400 && notJSON.message?.hasPrefix("Invalid JSON payload received.") == true)

            // What Google accepts: lowercase priorities, durations at the limits, a message of exactly 4096 bytes.
            var exact: JSONObject = ["token": token, "data": ["blob": ""]]
            let padding = 4_096 - (try JSONValue.object(["data": ["blob": ""]]).encoded().count)
            exact["data"] = ["blob": .string(String(repeating: "x", count: padding))]
            let accepted: [JSONObject] = [
                ["token": token, "android": ["priority": "normal", "ttl": "0s"]],
                ["token": token, "android": ["priority": "high", "ttl": "2419200s"]],
                ["condition": "'news' in topics && 'sport' in topics", "notification": ["title": "Hi"]],
                ["fid": "cGV0ZXJzLWluc3RhbGxhdGlvbg", "data": ["a": "b"]],
                exact,
            ]
            for message in accepted {
                let answer = try await client.send(message, accessToken: accessToken)
                #expect(answer.status == 200, "\(message)")
            }
            #expect(double.acceptedMessages.map(\.target).suffix(3).first == .condition("'news' in topics && 'sport' in topics"))
            #expect(double.acceptedMessages.map(\.target).suffix(2).first == .fid("cGV0ZXJzLWluc3RhbGxhdGlvbg"))
            #expect(double.acceptedMessages.map(\.target).last == .token(registrationToken()))
            #expect(double.acceptedMessages.count == accepted.count)
            #expect(double.counters.sendsRefused == cases.count + ttlCases.count + 1)
        }
    }
}
