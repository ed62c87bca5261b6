import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import HeraldWebPush
import Testing

/// The bytes of base64url text; fails the test when it is not base64url.
private func bytes(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
    try #require(Base64URL.decode(text), sourceLocation: sourceLocation)
}

@Suite("VAPID (RFC 8292)")
struct VAPIDTests {
    static let endpoint = URL(string: "https://fcm.googleapis.com/fcm/send/abc:def")!

    /// The header's parts: the JWT's header, claims and signature, and the key.
    static func parts(of authorization: String) throws -> (header: JSONObject, claims: JSONObject, signed: String, signature: Data, key: String) {
        #expect(authorization.hasPrefix("vapid t="))
        let fields = authorization.dropFirst("vapid ".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let token = try #require(fields.first { $0.hasPrefix("t=") }).dropFirst(2)
        let key = String(try #require(fields.first { $0.hasPrefix("k=") }).dropFirst(2))
        let segments = token.split(separator: ".").map(String.init)
        try #require(segments.count == 3)
        let header = try #require(JSONValue.decode(try bytes(segments[0])).objectValue)
        let claims = try #require(JSONValue.decode(try bytes(segments[1])).objectValue)
        return (header, claims, segments[0] + "." + segments[1], try bytes(segments[2]), key)
    }

    @Test func theTokenIsAnES256JWTForTheEndpointsOriginSignedByTheAdvertisedKey() throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_764_000_000))
        let key = P256.Signing.PrivateKey()
        let signer = VAPIDSigner(key: key, subject: "mailto:ops@example.com", clock: clock)
        let parts = try Self.parts(of: signer.authorization(for: Self.endpoint))
        #expect(parts.header == ["typ": "JWT", "alg": "ES256"])
        #expect(parts.claims == ["aud": "https://fcm.googleapis.com", "exp": .int(1_764_000_000 + 12 * 3600), "sub": "mailto:ops@example.com"])
        #expect(parts.key == signer.publicKey)
        let publicKey = try P256.Signing.PublicKey(x963Representation: try bytes(parts.key))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: parts.signature)
        #expect(publicKey.isValidSignature(signature, for: Data(parts.signed.utf8)))
        #expect(Base64URL.decode(signer.publicKey)?.count == 65)
    }

    @Test func oneTokenPerOriginIsReusedUntilAnHourBeforeItExpires() throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_764_000_000))
        let signer = VAPIDSigner(key: P256.Signing.PrivateKey(), subject: "https://example.com/contact", clock: clock)
        let first = signer.authorization(for: Self.endpoint)
        #expect(signer.authorization(for: URL(string: "https://fcm.googleapis.com/fcm/send/other")!) == first)
        let mozilla = signer.authorization(for: URL(string: "https://updates.push.services.mozilla.com/wpush/v2/x")!)
        #expect(try Self.parts(of: mozilla).claims["aud"] == "https://updates.push.services.mozilla.com")
        clock.advance(by: 10 * 3600)
        #expect(signer.authorization(for: Self.endpoint) == first)
        clock.advance(by: 1 * 3600 + 1)
        let renewed = signer.authorization(for: Self.endpoint)
        #expect(renewed != first)
        #expect(try Self.parts(of: renewed).claims["exp"] == .int(1_764_000_000 + 11 * 3600 + 1 + 12 * 3600))
    }

    @Test(arguments: [
        ("https://push.example.com:443/x", "https://push.example.com"), ("https://Push.Example.com:8443/x", "https://push.example.com:8443"),
        ("http://127.0.0.1:9000/p", "http://127.0.0.1:9000"), ("https://[::1]:4430/p", "https://[::1]:4430"),
    ])
    func theAudienceIsTheOrigin(endpoint: String, origin: String) throws {
        #expect(VAPIDSigner.origin(of: try #require(URL(string: endpoint))) == origin)
    }

    @Test func theSubjectMustBeAMailtoOrHTTPSContact() {
        #expect(VAPIDSigner.validSubject("mailto:ops@example.com"))
        #expect(VAPIDSigner.validSubject("https://example.com/contact"))
        #expect(!VAPIDSigner.validSubject("mailto:nobody"))
        #expect(!VAPIDSigner.validSubject("http://example.com"))
        #expect(!VAPIDSigner.validSubject("ops@example.com"))
    }
}
