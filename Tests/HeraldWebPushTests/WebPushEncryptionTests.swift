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

@Suite("Web Push encryption (RFC 8291)")
struct WebPushEncryptionTests {
    /// RFC 8291 Appendix A, every value as the RFC prints it.
    enum Example {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    @Test func theRFCsExampleIsReproducedByteForByte() throws {
        let keys = try WebPushEncryption.SubscriptionKeys(p256dh: Example.receiverPublic, auth: Example.auth)
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: try bytes(Example.senderPrivate))
        let body = try WebPushEncryption.encrypt(
            Data(Example.plaintext.utf8), for: keys, ephemeralKey: sender, salt: try bytes(Example.salt))
        #expect(Base64URL.encode(body) == Example.body)
    }

    @Test func theRFCsExampleDecryptsWithTheReceiversKey() throws {
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: try bytes(Example.receiverPrivate))
        let subscriber = WebPushDecryption.Subscriber(privateKey: receiver, auth: try bytes(Example.auth))
        let decrypted = try WebPushDecryption.decrypt(try bytes(Example.body), for: subscriber)
        #expect(String(decoding: decrypted.plaintext, as: UTF8.self) == Example.plaintext)
        #expect(decrypted.recordSize == 4096)
    }

    @Test func eachMessageHasItsOwnKeyAndSaltAndTheLongestPlaintextFitsOneRecord() throws {
        let subscriber = WebPushDecryption.Subscriber()
        let keys = try WebPushEncryption.SubscriptionKeys(p256dh: subscriber.p256dh, auth: subscriber.authText)
        let longest = Data(repeating: 0x61, count: WebPushEncryption.maximumPlaintextSize)
        let first = try WebPushEncryption.encrypt(longest, for: keys)
        let second = try WebPushEncryption.encrypt(longest, for: keys)
        #expect(first.count == 4096)
        #expect(first.prefix(16) != second.prefix(16))  // salt
        #expect(first[21..<86] != second[21..<86])  // ephemeral key
        #expect(try WebPushDecryption.decrypt(first, for: subscriber).plaintext == longest)
        #expect(throws: WebPushEncryption.TooLarge(size: 3_994)) {
            try WebPushEncryption.encrypt(Data(repeating: 0x61, count: 3_994), for: keys)
        }
    }

    @Test func anotherSubscribersKeyCannotDecrypt() throws {
        let subscriber = WebPushDecryption.Subscriber()
        let keys = try WebPushEncryption.SubscriptionKeys(p256dh: subscriber.p256dh, auth: subscriber.authText)
        let body = try WebPushEncryption.encrypt(Data("secret".utf8), for: keys)
        let stranger = WebPushDecryption.Subscriber(privateKey: .init(), auth: subscriber.auth)
        #expect(throws: WebPushDecryption.Failure.authentication) { try WebPushDecryption.decrypt(body, for: stranger) }
    }

    @Test func malformedSubscriptionKeysAreNamed() {
        let subscriber = WebPushDecryption.Subscriber()
        #expect(throws: WebPushEncryption.KeyError.p256dh) { try WebPushEncryption.SubscriptionKeys(p256dh: "AAAA", auth: subscriber.authText) }
        // A point of the right length that is not on the curve.
        let offCurve = Base64URL.encode(Data([0x04] + [UInt8](repeating: 1, count: 64)))
        #expect(throws: WebPushEncryption.KeyError.p256dh) { try WebPushEncryption.SubscriptionKeys(p256dh: offCurve, auth: subscriber.authText) }
        #expect(throws: WebPushEncryption.KeyError.auth) { try WebPushEncryption.SubscriptionKeys(p256dh: subscriber.p256dh, auth: "c2hvcnQ") }
        #expect(throws: WebPushEncryption.KeyError.auth) { try WebPushEncryption.SubscriptionKeys(p256dh: subscriber.p256dh, auth: "not base64url!") }
    }
}
