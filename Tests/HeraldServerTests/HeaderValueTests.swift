import Foundation
import HTTPTypes
import HeraldCore
@testable import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Issue 29, item 4: a sender's value that becomes an HTTP/2 header (the APNs collapse id) is refused at the request
/// when it holds a control character, and text log lines escape control characters.
@Suite("Header values and log lines")
struct HeaderValueTests {
    /// JSON string escapes of control characters: LF, CR + LF, NUL, tab, ESC, DEL, and a C1 control (U+0085).
    static let controls = [#"\n"#, #"\r\n"#, #"\u0000"#, #"\t"#, #"\u001b"#, #"\u007f"#, #"\u0085"#]

    @Test func collapseIDsWithControlCharactersAreRefusedWith400NamingTheFieldAndNothingIsSent() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x51))
            let token = try await client.createToken(for: owner).token
            for control in Self.controls {
                let value = "door\(control)forged: 1"
                let refusals: [(TestResponse, String)] = [
                    (try await client.notify(owner.userID, extra: #", "notification_id": "\#(value)""#), "notification_id"),
                    (try await client.sendAction(
                        [.authorization: "Bearer \(token)"], body: #"{"title": "T", "body": "B", "notification_id": "\#(value)"}"#),
                     "notification_id"),
                    (try await client.post("/api/push/homeassistant", homeAssistantBody(owner.userID, data: #"{"tag": "\#(value)"}"#)),
                     "data.tag"),
                    (try await client.post(
                        "/api/push/homeassistant",
                        homeAssistantBody(owner.userID, data: #"{"apns_headers": {"apns-collapse-id": "\#(value)"}}"#)),
                     "data.apns_headers.apns-collapse-id"),
                    (try await client.post(
                        "/api/push/homeassistant",
                        homeAssistantBody(owner.userID, data: #"{"apns_headers": {"apns-push-type": "alert\#(control)"}}"#)),
                     "data.apns_headers.apns-push-type"),
                ]
                for (response, field) in refusals {
                    #expect(response.status == .badRequest, "\(field) with \(control)")
                    let body = try response.json()
                    #expect(body["field"]?.stringValue == field, "\(field) with \(control): \(body)")
                    let message = body["error"]?.stringValue ?? body["message"]?.stringValue ?? ""
                    #expect(message.contains("control characters"), "\(field) with \(control): \(message)")
                }
            }
            // Nothing was accepted: no push went out, and the day's count is untouched.
            #expect(apns.production.requests.isEmpty)
            let accepted = try await client.notify(owner.userID, extra: #", "notification_id": "door-1""#)
            #expect(accepted.status == .created)
            #expect(accepted.rateLimit == RateLimitHeaders(limit: 150, remaining: 149))
            #expect(apns.production.acceptedPushes.first?.header("apns-collapse-id") == "door-1")
        }
        try await apns.shutdown()
    }

    @Test func printableCollapseIDsStillPass() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x52))
            let value = "Küche — door \"1\" / ☃"
            let response = try await client.post(
                "/api/push/homeassistant",
                homeAssistantBody(owner.userID, data: #"{"tag": "Küche — door \"1\" / ☃"}"#))
            #expect(response.status == .created, "\(String(buffer: response.body))")
            #expect(apns.production.acceptedPushes.first?.header("apns-collapse-id") == value)
        }
        try await apns.shutdown()
    }

    @Test func theRuleRefusesEveryControlCharacterAndNothingElse() {
        for scalar in (0...0x9F as ClosedRange<UInt32>).compactMap(Unicode.Scalar.init) {
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            #expect(HeaderValueRule.accepts("a\(Character(scalar))b") == !isControl, "U+\(String(scalar.value, radix: 16))")
        }
        #expect(HeaderValueRule.accepts("Küche ☃ 🚪"))
    }

    /// A text log line that carries a sender's value with line breaks, NUL and an escape sequence comes out as one
    /// line, with those characters escaped.
    @Test func textLogLinesEscapeControlCharacters() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let writer = LogLineWriter(fileDescriptor: ends[1])
        let logger = Logger(label: "herald") { StreamLogHandler(label: $0, stream: writer.stream) }
        logger.warning(
            "refused \("a\r\n2026-01-01T00:00:00+0000 critical herald : [HeraldServer] forged\u{0}\u{1B}[31m")",
            metadata: ["tag": "x\ny\u{85}"])
        writer.flush()
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = read(ends[0], &buffer, buffer.count)
        try #require(count > 0)
        let output = Array(buffer[0..<count])
        #expect(output.filter { $0 == 0x0A }.count == 1, "one line: \(String(decoding: output, as: UTF8.self))")
        #expect(output.last == 0x0A)
        #expect(!output.contains(0) && !output.contains(0x0D) && !output.contains(0x1B))
        let text = String(decoding: output, as: UTF8.self)
        #expect(text.contains(#"a\r\n2026-01-01T00:00:00+0000 critical herald : [HeraldServer] forged\u{0}\u{1B}[31m"#), "\(text)")
        #expect(text.contains(#"tag=x\ny\u{85}"#), "\(text)")
        #expect(LogLineWriter.escapingControlCharacters("plain line\n") == "plain line\n")
    }
}
