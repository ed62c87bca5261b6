import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldTesting
import Testing

@Suite("Provider token (ES256 JWT)")
struct ProviderTokenIssuerTests {
    private func parts(_ jwt: String) throws -> (header: JSONObject, claims: JSONObject, signature: Data, input: String) {
        let pieces = jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(pieces.count == 3)
        let header = try #require(JWTFactory.decodeBase64URL(pieces[0]))
        let claims = try #require(JWTFactory.decodeBase64URL(pieces[1]))
        let signature = try #require(JWTFactory.decodeBase64URL(pieces[2]))
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
        return (
            try #require(JSONValue.decode(header).objectValue), try #require(JSONValue.decode(claims).objectValue),
            signature, "\(pieces[0]).\(pieces[1])"
        )
    }

    @Test func tokenHasExactlyTheFieldsAppleWants() throws {
        let key = TestKey()
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600.75))
        let issuer = ProviderTokenIssuer(key: key.privateKey, keyID: key.keyID, teamID: key.teamID, clock: clock)
        let token = issuer.currentToken()
        let (header, claims, signature, input) = try parts(token.jwt)
        #expect(header == ["alg": "ES256", "kid": .string(key.keyID)])
        #expect(claims == ["iss": .string(key.teamID), "iat": .int(1_763_769_600)])
        #expect(signature.count == 64)
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(ecdsa, for: Data(input.utf8)))
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_763_769_600))
    }

    @Test func tokenIsCachedAndRenewedAfterFiftyMinutes() {
        let key = TestKey()
        let clock = TestClock()
        let issuer = ProviderTokenIssuer(key: key.privateKey, keyID: key.keyID, teamID: key.teamID, clock: clock)
        let first = issuer.currentToken()
        clock.advance(by: 49 * 60 + 59)
        #expect(issuer.currentToken() == first)
        clock.advance(by: 1)
        let second = issuer.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(50 * 60))
    }

    @Test func neverRenewedWithinTwentyMinutes() {
        let key = TestKey()
        let clock = TestClock()
        let issuer = ProviderTokenIssuer(
            key: key.privateKey, keyID: key.keyID, teamID: key.teamID, refreshInterval: .seconds(60), clock: clock)
        let first = issuer.currentToken()
        clock.advance(by: 19 * 60 + 59)
        #expect(issuer.currentToken() == first)
        clock.advance(by: 1)
        #expect(issuer.currentToken() != first)
    }

    @Test func earlyRenewalAfterExpiryIsAllowedOncePerToken() {
        let key = TestKey()
        let clock = TestClock()
        let issuer = ProviderTokenIssuer(key: key.privateKey, keyID: key.keyID, teamID: key.teamID, clock: clock)
        let first = issuer.currentToken()
        let renewed = issuer.renewAfterExpiry(of: first)
        #expect(renewed != nil && renewed != first)
        #expect(renewed?.isEarlyRenewal == true)
        // A second request that saw the same rejected token gets the renewed one, not a third token.
        #expect(issuer.renewAfterExpiry(of: first) == renewed)
        // The renewed token is not renewed early again.
        if let renewed { #expect(issuer.renewAfterExpiry(of: renewed) == nil) }
        #expect(issuer.currentToken() == renewed)
    }
}
