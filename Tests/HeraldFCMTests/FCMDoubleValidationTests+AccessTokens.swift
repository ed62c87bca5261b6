import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing
import _CryptoExtras

/// The access tokens the double issues: expiry by its clock, revocation, scopes.
extension FCMDoubleValidationTests {
    // MARK: Access tokens

    @Test func accessTokenExpiresByTheDoublesClock() async throws {
        try await run(accessTokenLifetime: 600) { double, client, clock in
            let assertion = try double.serviceAccount.assertion(tokenURI: double.tokenURI, issuedAt: clock.now())
            let granted = try await client.exchange(assertion)
            #expect(granted.json?["expires_in"] == 600)
            let accessToken = try #require(granted.json?["access_token"]?.stringValue)
            clock.advance(by: 599)
            #expect(try await client.send(message(), accessToken: accessToken).status == 200)
            clock.advance(by: 1)
            let expired = try await client.send(message(), accessToken: accessToken)
            #expect(expired.status == 401)
            #expect(expired.canonicalStatus == "UNAUTHENTICATED")
            #expect(expired.errorCode == nil)
            let reason = expired.error?["details"].flatMap { details -> JSONValue? in
                if case .array(let items) = details { return items.first?.objectValue?["reason"] }
                return nil
            }
            #expect(reason == "ACCESS_TOKEN_EXPIRED")
            #expect(expired.headers["www-authenticate"].first?.contains(#"error="invalid_token""#) == true)

            double.setAccessTokenLifetime(60)
            let shorter = try await client.exchange(
                try double.serviceAccount.assertion(tokenURI: double.tokenURI, issuedAt: clock.now()))
            #expect(shorter.json?["expires_in"] == 60)
        }
    }

    @Test func revokedAndMissingCredentialsAreUnauthenticated() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            #expect(try await client.send(message(), accessToken: accessToken).status == 200)
            double.revokeAccessTokens()
            let revoked = try await client.send(message(), accessToken: accessToken)
            #expect(
                revoked.json
                    == errorBody(
                        401, "UNAUTHENTICATED",
                        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                            + "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                        details: []))
            #expect(try await client.send(message(), accessToken: "ya29.made-up").status == 401)
            let missing = try await client.send(message(), accessToken: nil)
            #expect(missing.status == 401)
            #expect(missing.message?.hasPrefix("Request is missing required authentication credential.") == true)
            // A legacy server key is no OAuth credential.
            let legacy = try await client.request(
                path: "/v1/projects/\(Self.project)/messages:send", headers: [("authorization", "key=AAAA-legacy-server-key")],
                body: try JSONValue.object(["message": .object(message())]).encoded())
            #expect(legacy.status == 401)
            #expect(legacy.message?.hasPrefix("Request had invalid authentication credentials.") == true)
            // A token issued after the revocation works.
            #expect(try await client.send(message(), accessToken: try await client.accessToken()).status == 200)
            #expect(double.acceptedMessages.count == 2)
            #expect(double.requests.compactMap(\.error).allSatisfy { $0.errorCode == nil })
        }
    }

    @Test func tokenWithoutAnFCMScopeCannotSend() async throws {
        try await run { double, client, _ in
            let readOnly = try await client.accessToken(scope: "https://www.googleapis.com/auth/userinfo.email")
            let refused = try await client.send(message(), accessToken: readOnly)
            #expect(refused.status == 403)
            #expect(refused.canonicalStatus == "PERMISSION_DENIED")
            #expect(refused.message == "Request had insufficient authentication scopes.")
            let cloud = try await client.accessToken(
                scope: "https://www.googleapis.com/auth/userinfo.email \(FCMDouble.cloudPlatformScope)")
            #expect(try await client.send(message(), accessToken: cloud).status == 200)
            #expect(double.acceptedMessages.count == 1)
        }
    }
}
