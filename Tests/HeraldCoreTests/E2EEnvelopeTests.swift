import Crypto
import Foundation
import Testing

@testable import HeraldCore

/// Every case of PushWard's `pw1` vectors (Fixtures/pw1/e2e-vectors.json, copied unchanged; SOURCE.md says from where).
@Suite("pw1 envelope")
struct E2EEnvelopeTests {
    static let vectors: JSONObject = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/pw1/e2e-vectors.json")
        // A missing or broken fixture fails every test that reads it.
        guard let data = try? Data(contentsOf: url), let object = try? JSONValue.decode(data).objectValue else { return [:] }
        return object
    }()

    static func cases(_ kind: String) -> [JSONObject] {
        guard case .array(let elements)? = vectors[kind] else { return [] }
        return elements.compactMap(\.objectValue)
    }

    static func hexBytes(_ hex: String) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            data.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return data
    }

    @Test func theVectorsAreAllThere() {
        #expect(Self.vectors["format"] == "pw1")
        #expect(Self.cases("seal").count == 9)
        #expect(Self.cases("open_fail").count == 10)
        #expect(Self.cases("parse_fail").count == 10)
    }

    @Test(arguments: E2EEnvelopeTests.cases("seal")) func sealingWithTheNonceGivesTheEnvelopeAndOpeningGivesTheMessage(_ vector: JSONObject) throws {
        let name = vector["name"]?.stringValue ?? "?"
        let key = try E2EKey(hex: try #require(vector["key_hex"]?.stringValue))
        #expect(key.keyID == vector["kid"]?.stringValue, "\(name): key id")
        #expect(key.encryptionKeyHex == vector["enc_key_hex"]?.stringValue, "\(name): encryption key")
        let nonce = try AES.GCM.Nonce(data: Self.hexBytes(try #require(vector["nonce_hex"]?.stringValue)))
        let plaintext = Data(try #require(vector["plaintext"]?.stringValue).utf8)
        let sealed = try key.seal(plaintext: plaintext, nonce: nonce)
        let expected = try #require(vector["envelope"]?.stringValue)
        #expect(sealed.text == expected, "\(name): envelope")

        let envelope = try E2EEnvelope(expected)
        #expect(envelope.keyID == key.keyID)
        let message = try key.open(envelope)
        let expect = try #require(vector["expect"]?.objectValue)
        #expect(message.title == expect["title"]?.stringValue, "\(name): title")
        #expect(message.subtitle == expect["subtitle"]?.stringValue, "\(name): subtitle")
        #expect(message.body == expect["body"]?.stringValue, "\(name): body")
        #expect(message.url == expect["url"]?.stringValue, "\(name): url")
    }

    /// Each vector's stated reason, as the error it must be.
    static let openFailures: [String: E2EKey.OpenError] = [
        "tampered_tag": .authenticationFailed, "tampered_ciphertext": .authenticationFailed, "tampered_nonce": .authenticationFailed,
        "wrong_key": .keyIDMismatch("767c0806"),
        // The key id is also in the additional data, so a swapped id could not pass the tag either; the id check comes first.
        "kid_swapped": .keyIDMismatch("eb6c5c92"), "plaintext_not_object": .notObject,
        "plaintext_not_json": .notJSON, "missing_body": .titleOrBodyNotString, "empty_title": .titleOrBodyEmpty,
        "title_not_string": .titleOrBodyNotString,
    ]

    @Test(arguments: E2EEnvelopeTests.cases("open_fail")) func openingFailsForTheStatedReason(_ vector: JSONObject) throws {
        let name = try #require(vector["name"]?.stringValue)
        let expected = try #require(Self.openFailures[name], "a vector this test does not know: \(name)")
        let key = try E2EKey(hex: try #require(vector["key_hex"]?.stringValue))
        // Every open-fail envelope has a valid shape: the server passes it on, the receiver refuses it.
        let envelope = try E2EEnvelope(try #require(vector["envelope"]?.stringValue))
        #expect(throws: expected, "\(name)") { try key.open(envelope) }
    }

    static let parseFailures: [String: E2EEnvelope.ShapeError] = [
        "padding_char": .alphabet, "uppercase_kid": .keyID, "short_kid": .keyID, "wrong_version": .version, "too_short": .tooShort,
        "bad_base64_length": .length, "standard_alphabet": .alphabet, "missing_part": .parts, "empty": .empty,
    ]

    @Test(arguments: E2EEnvelopeTests.cases("parse_fail")) func theShapeCheckRefusesForTheStatedReason(_ vector: JSONObject) throws {
        let name = try #require(vector["name"]?.stringValue)
        let text = try #require(vector["envelope"]?.stringValue)
        if name == "too_long" {
            #expect(throws: E2EEnvelope.ShapeError.tooLong(text.count)) { try E2EEnvelope(text) }
            #expect(text.count == E2EEnvelope.maximumLength + 1)
            return
        }
        let expected = try #require(Self.parseFailures[name], "a vector this test does not know: \(name)")
        #expect(throws: expected, "\(name)") { try E2EEnvelope(text) }
    }

    @Test func aBase64PartWithUnusedBitsSetIsRefused() throws {
        // 42 characters: the last carries 4 bits past the 31st byte; "A" leaves them clear, "B" sets one.
        #expect(try E2EEnvelope("pw1.767c0806." + String(repeating: "A", count: 42)).sealed.count == 31)
        #expect(throws: E2EEnvelope.ShapeError.notCanonical) { try E2EEnvelope("pw1.767c0806." + String(repeating: "A", count: 41) + "B") }
        // 43 characters: 2 bits past the 32nd byte.
        #expect(try E2EEnvelope("pw1.767c0806." + String(repeating: "A", count: 42) + "E").sealed.count == 32)
        #expect(throws: E2EEnvelope.ShapeError.notCanonical) { try E2EEnvelope("pw1.767c0806." + String(repeating: "A", count: 42) + "B") }
    }

    @Test func aSealedMessageIsPaddedTo64BytesAndOpensAgain() throws {
        let key = E2EKey.generate()
        let message = E2EMessage(title: "Front door", subtitle: "Camera 2", body: "Person detected", url: "https://nvr.example/e/42")
        let envelope = try key.seal(message)
        #expect(try key.openPlaintext(envelope).count % 64 == 0)
        #expect(try key.open(envelope) == message)
        #expect(try E2EKey(hex: key.hex.uppercased()) == key, "either case")
        #expect(try E2EKey(hex: " " + key.hex.prefix(32) + "\n" + key.hex.dropFirst(32)) == key, "whitespace ignored")
        #expect(throws: E2EKey.KeyError.self) { try E2EKey(hex: String(key.hex.dropLast())) }
        #expect(throws: E2EKey.KeyError.self) { try E2EKey(hex: String(key.hex.dropLast()) + "g") }
    }

    @Test func aMessageTooLargeForAnEnvelopeIsRefused() throws {
        let key = E2EKey.generate()
        let fits = E2EMessage(title: "t", body: String(repeating: "x", count: 2266 - 23))
        #expect(fits.plaintext.count == 2266)
        #expect(try key.seal(fits).text.count == E2EEnvelope.maximumLength)
        #expect(throws: E2EKey.TooLarge.self) { try key.seal(E2EMessage(title: "t", body: String(repeating: "x", count: 2266 - 22))) }
    }

    @Test(arguments: [
        ("javascript:alert(1)", false), (" JavaScript:alert(1)", false), ("java\tscript:alert(1)", false), ("data:text/html,x", false),
        ("file:///etc/passwd", false), ("vbscript:x", false), ("https:///nohost", false), ("https://example.com/a", true),
        ("myapp://incident/7", true), ("/relative/path", true),
    ])
    func theReceiverDropsUnsafeURLs(_ url: String, _ kept: Bool) {
        #expect(E2EMessage.isSafeURL(url) == kept, "\(url)")
    }

    @Test func clampingCountsCodePoints() {
        let flags = String(repeating: "🇨🇭", count: 200)  // 400 code points, 200 characters
        #expect(E2EMessage.clamped(flags, to: 256).unicodeScalars.count == 256)
        #expect(E2EMessage.clamped("short", to: 256) == "short")
    }
}
