import Foundation
import HeraldCore
import Testing

@Suite("Payload fitting")
struct PayloadFitterTests {
    @Test func aPayloadWithinTheLimitIsUntouched() throws {
        let payload: JSONObject = ["aps": ["alert": ["title": "T", "body": "B"]]]
        let fitted = try PayloadFitter.fit(payload, limit: 4_096, bodyPath: ["aps", "alert", "body"])
        #expect(fitted.truncated == false)
        #expect(String(decoding: fitted.data, as: UTF8.self) == #"{"aps":{"alert":{"body":"B","title":"T"}}}"#)
    }

    @Test(arguments: ["a", "é", "🐦", "👩‍👩‍👧‍👦", "\"\\"])
    func theBodyIsShortenedToTheLongestPrefixThatFits(unit: String) throws {
        let body = String(repeating: unit, count: 3_000)
        let fitted = try PayloadFitter.fit(["aps": ["alert": ["body": .string(body)]], "x": "y"], limit: 1_000, bodyPath: ["aps", "alert", "body"])
        #expect(fitted.truncated)
        #expect(fitted.data.count <= 1_000)
        let shortened = try #require(JSONValue.decode(fitted.data).objectValue?["aps"]?.objectValue?["alert"]?.objectValue?["body"]?.stringValue)
        #expect(shortened.hasSuffix(PayloadFitter.ellipsis))
        let kept = String(shortened.dropLast())
        #expect(body.hasPrefix(kept))
        // One more character would not have fitted.
        let longer = String(body.prefix(kept.count + 1)) + PayloadFitter.ellipsis
        let tooLong = try JSONValue.object(["aps": ["alert": ["body": .string(longer)]], "x": "y"]).encoded()
        #expect(tooLong.count > 1_000)
    }

    @Test func aPayloadThatCannotFitIsRefused() {
        let payload: JSONObject = ["aps": ["alert": ["title": .string(String(repeating: "t", count: 200)), "body": "b"]]]
        #expect(throws: PayloadFitter.TooLarge.self) { try PayloadFitter.fit(payload, limit: 100, bodyPath: ["aps", "alert", "body"]) }
        #expect(throws: PayloadFitter.TooLarge.self) { try PayloadFitter.fit(["aps": ["content-available": 1], "big": .string(String(repeating: "x", count: 200))], limit: 100, bodyPath: ["aps", "alert", "body"]) }
    }
}

@Suite("Retry policy")
struct RetryPolicyTests {
    @Test func delaysGrowExponentiallyWithJitterAndACap() {
        let policy = RetryPolicy(initialDelay: 2, maximumDelay: 600)
        for attempts in 1...12 {
            let ceiling = min(2 * pow(2, Double(attempts - 1)), 600)
            for _ in 0..<20 {
                let delay = policy.delay(afterAttempts: attempts)
                #expect(delay >= ceiling / 2 && delay <= ceiling)
            }
        }
        #expect(policy.delay(afterAttempts: 1, providerMinimum: 60) == 60)
    }
}

@Suite("Time and secrets")
struct TimeAndSecretsTests {
    @Test func utcDaysStartAndEndAtMidnightUTC() {
        let day = UTCDay(containing: Date(timeIntervalSince1970: 1_763_855_999))  // 2025-11-22T23:59:59Z
        #expect(day.description == "2025-11-22")
        #expect(day.end.iso8601WithMilliseconds == "2025-11-23T00:00:00.000Z")
        #expect(UTCDay(containing: day.end).description == "2025-11-23")
        // The arithmetic agrees with the Gregorian calendar from 1901 to 2408, leap days included.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for days in stride(from: -25_000, to: 160_000, by: 97) + [0, -1, 11_016, 11_017, 10_957, 10_956] {
            let date = Date(timeIntervalSince1970: Double(days) * 86_400 + 43_200)
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            let expected = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
            #expect(UTCDay(containing: date).description == expected, "\(days)")
        }
    }

    @Test func isoTimestampsAgreeWithFoundationToTheMillisecond() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!)
        var generator = SystemRandomNumberGenerator()
        let edges: [Int] = [0, -1, 86_399_999, 86_400_000, -86_400_000, 951_782_400_000, 4_102_444_799_999]
        let randomMilliseconds = (0..<2_000).map { _ in Int.random(in: -2_000_000_000_000...8_000_000_000_000, using: &generator) }
        for milliseconds in edges + randomMilliseconds {
            // Half a millisecond in, where no rounding of the Double can move either of them to the next one.
            let midway = Date(timeIntervalSince1970: (Double(milliseconds) + 0.5) / 1_000)
            #expect(midway.iso8601WithMilliseconds == midway.formatted(style), "\(milliseconds)")
            // A whole millisecond stays itself, although its Double may lie just below it (Foundation's prints
            // the millisecond before then).
            let whole = Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
            #expect(whole.iso8601WithMilliseconds == midway.iso8601WithMilliseconds, "\(milliseconds)")
        }
        // Fractions of a millisecond are cut off.
        #expect(Date(timeIntervalSince1970: 1.2349).iso8601WithMilliseconds == "1970-01-01T00:00:01.234Z")
        #expect(Date(timeIntervalSince1970: -0.0001).iso8601WithMilliseconds == "1969-12-31T23:59:59.999Z")
    }

    @Test func randomUUIDsAreVersion4AndDiffer() {
        let uuids = (0..<1_000).map { _ in UUID.random() }
        #expect(Set(uuids).count == uuids.count)
        for uuid in uuids {
            #expect(uuid.uuid.6 >> 4 == 4)  // version 4
            #expect(uuid.uuid.8 >> 6 == 0b10)  // RFC 9562 variant
        }
        // Every other bit varies: none is the same in all of them.
        let bytes = uuids.map { withUnsafeBytes(of: $0.uuid) { Array($0) } }
        let fixed: [Int: UInt8] = [6: 0xF0, 8: 0xC0]
        for index in 0..<16 {
            let varying = bytes.reduce(UInt8(0)) { $0 | ($1[index] ^ bytes[0][index]) }
            #expect(varying | (fixed[index] ?? 0) == 0xFF, "byte \(index)")
        }
    }

    @Test func idTextIsFoundationsLowercased() {
        var uuids = (0..<1_000).map { _ in UUID.random() } + (0..<100).map { _ in UUID.timeOrdered(at: Date()) }
        uuids.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        uuids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        uuids.append(UUID(uuid: (0x09, 0x0a, 0x90, 0xa0, 0x0f, 0xf0, 0x19, 0x9a, 0xa9, 0x1a, 0x00, 0x01, 0x10, 0xfe, 0xef, 0x5c)))
        for uuid in uuids {
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(UUID(uuidString: uuid.lowercasedText) == uuid)
        }
        #expect(uuids.last?.lowercasedText == "090a90a0-0ff0-199a-a91a-000110feef5c")
    }

    @Test func timeOrderedUUIDsCarryTheirMillisecondAndSortByIt() {
        let start = Date(timeIntervalSince1970: 1_795_000_000.123)
        let uuids = (0..<2_000).map { UUID.timeOrdered(at: start.addingTimeInterval(Double($0 / 4) / 1_000)) }
        #expect(Set(uuids).count == uuids.count)  // four in each millisecond, all different
        for (index, uuid) in uuids.enumerated() {
            let milliseconds = withUnsafeBytes(of: uuid.uuid) { $0[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            #expect(milliseconds == 1_795_000_000_123 + UInt64(index / 4))
            #expect(uuid.uuid.6 >> 4 == 7 && uuid.uuid.8 >> 6 == 0b10)
        }
        let texts = uuids.map(\.lowercasedText)
        for index in stride(from: 4, to: texts.count, by: 4) { #expect(texts[index - 1] < texts[index]) }
    }

    @Test func secretsAreRandomHashedAndComparedWholly() {
        let secret = Secrets.random256BitHex()
        #expect(Secrets.isHex256(secret) && secret == secret.lowercased())
        #expect(Secrets.random256BitHex() != secret)
        #expect(Secrets.hash(secret).count == 64)
        #expect(Secrets.matches(secret, hash: Secrets.hash(secret)))
        #expect(!Secrets.matches(secret + "0", hash: Secrets.hash(secret)))
        #expect(!Secrets.constantTimeEquals("abc", "abd"))
        // The fingerprint is the hash's first 128 bits.
        let fingerprint = Secrets.fingerprint(secret)
        let hash = Secrets.hash(secret)
        #expect(String(format: "%016llx%016llx", fingerprint.high, fingerprint.low) == String(hash.prefix(32)))
        #expect(Secrets.fingerprint(secret + "0") != fingerprint)
        #expect(!Secrets.constantTimeEquals("abc", "abcd"))
        #expect(Secrets.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func jsonKeepsIntegersAndDoublesApartAndSortsKeys() throws {
        let value = try JSONValue.decode(Data(#"{"b": 1, "a": 1.5, "c": [true, null, "x/y"]}"#.utf8))
        #expect(value == ["a": 1.5, "b": 1, "c": [true, nil, "x/y"]])
        #expect(String(decoding: try value.encoded(), as: UTF8.self) == #"{"a":1.5,"b":1,"c":[true,null,"x/y"]}"#)
    }

    /// The hand-written writer must produce exactly what Foundation's encoder produced (stored payloads and the
    /// bytes sent to APNs must not change), and the reader must read what Foundation's decoder read.
    @Test func jsonTextMatchesFoundationsEncoderAndDecoder() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let samples: [JSONValue] = [
            ["aps": ["alert": ["title": "Person détecté 🐦", "body": "Front \"Door\"\n\t\\ / \u{01}\u{1f}\u{7f}"], "sound": "default",
                     "mutable-content": 1], "open": ["type": "frigate_event", "id": "1739987.123-abcdef"]],
            ["b": 1, "a": 1.5, "B": -3, "_": [true, false, nil], "aa": [], "é": [:], "Z": 0.1, "10": 1e21, "2": -0.0,
             "big": .int(Int.max), "small": .int(Int.min), "half": 2.5e-8, "whole": 3.0, "ü": "\u{2028}\u{2029}"],
            .array([.string(""), .int(0), .double(123_456.789)]),
        ]
        for sample in samples {
            #expect(String(decoding: try sample.encoded(), as: UTF8.self) == String(decoding: try encoder.encode(sample), as: UTF8.self))
            #expect(try JSONValue.decode(try sample.encoded()) == (try JSONDecoder().decode(JSONValue.self, from: try encoder.encode(sample))))
        }
        let documents = [
            #"{"a": "\u00e9\ud83d\ude00\/"}"#, "[1]", "[-1]", "[1.0]", "[1e2]", "[0.5]", "[-0]", "[12345678901234567890]",
            #" [ ] "#, #""x""#, #"null"#, #"{"k":{"k":{"k":[{}]}}}"#,
        ]
        for document in documents {
            #expect(try JSONValue.decode(Data(document.utf8)) == (try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8))), "\(document)")
        }
    }

    @Test(arguments: [
        #"{"a": 1, "a": 2}"#, #"{"a": 1} x"#, #"{"a": "\u0001"}"#.replacingOccurrences(of: "\\u0001", with: "\u{01}"),
        #"{"a": "\x"}"#, #"{"a": "\ud800"}"#, #"[1,]"#, #"{"a" 1}"#, #"01"#, #"1."#, #"-"#, #"tru"#, "",
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ])
    func jsonTextRefusesWhatIsNotStrictJSON(_ document: String) {
        #expect(throws: (any Error).self) { try JSONValue.decode(Data(document.utf8)) }
    }

    @Test func jsonTextRefusesInvalidUTF8AndNamesADuplicateKey() throws {
        #expect(throws: (any Error).self) { try JSONValue.decode(Data([0x22, 0xC3, 0x28, 0x22])) }
        do {
            _ = try JSONValue.decode(Data(#"{"user_id": "a", "title": "t", "user_id": "b"}"#.utf8))
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(JSONValue.duplicateKey(in: error) == "user_id")
        }
    }
}
