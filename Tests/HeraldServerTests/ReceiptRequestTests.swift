import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 39, section 3: the rules of `acknowledge` on `POST /notifications` over real HTTP: every number's boundaries,
/// the refused combinations, and the 25 receipts per device.
@Suite("Receipts: request rules")
struct ReceiptRequestTests {
    static func body(_ acknowledge: String, _ extra: String = "") -> String {
        #"{"title": "T", "body": "B"\#(extra), "acknowledge": \#(acknowledge)}"#
    }

    @Test func boundariesAreAcceptedAndEverythingPastThemIsA400NamingTheField() async throws {
        try await TestServer().run { client in
            let token = try await client.createToken(for: try await client.register())
            let accepted = [
                #"{}"#, #"{"repeat_seconds": 30}"#, #"{"repeat_seconds": 3600}"#, #"{"expire_seconds": 60}"#, #"{"expire_seconds": 10800}"#,
                #"{"repeat_seconds": 60.0, "expire_seconds": 600}"#, #"{"repeat_seconds": null}"#,
            ]
            for acknowledge in accepted {
                let response = try await client.sendAction(token.bearer, body: Self.body(acknowledge))
                #expect(response.status == .created, "\(acknowledge): \(String(buffer: response.body))")
                #expect(try response.json()["receipt"]?.stringValue != nil, "\(acknowledge)")
            }
            let refused: [(String, String)] = [
                (#"{"repeat_seconds": 29}"#, "acknowledge.repeat_seconds"), (#"{"repeat_seconds": 3601}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": 30.5}"#, "acknowledge.repeat_seconds"), (#"{"repeat_seconds": "60"}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": -60}"#, "acknowledge.repeat_seconds"), (#"{"repeat_seconds": true}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": 1e300}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": 9223372036854775807}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": 99999999999999999999999}"#, "acknowledge.repeat_seconds"),
                (#"{"repeat_seconds": -9223372036854775808}"#, "acknowledge.repeat_seconds"),
                (#"{"expire_seconds": 59}"#, "acknowledge.expire_seconds"), (#"{"expire_seconds": 10801}"#, "acknowledge.expire_seconds"),
                (#"{"expire_seconds": 600.25}"#, "acknowledge.expire_seconds"), (#"{"expire_seconds": 1e20}"#, "acknowledge.expire_seconds"),
                (#"{"expire_seconds": []}"#, "acknowledge.expire_seconds"),
                (#"{"repeat_seconds": 60, "callback": "x"}"#, "acknowledge.callback"), (#""yes""#, "acknowledge"), (#"[]"#, "acknowledge"),
                (#"60"#, "acknowledge"),
            ]
            for (acknowledge, field) in refused {
                let response = try await client.sendAction(token.bearer, body: Self.body(acknowledge))
                #expect(response.status == .badRequest, "\(acknowledge)")
                #expect(try response.json()["field"] == .string(field), "\(acknowledge): \(String(buffer: response.body))")
            }
            let urls = (0..<10).map { #"{"id": "a\#($0)", "title": "A", "url": "https://example.com/\#($0)"}"# }.joined(separator: ", ")
            let combinations = [
                Self.body("{}", #", "push": false"#), Self.body("{}", #", "level": "passive""#),
                Self.body("{}", #", "actions": [\#(urls)]"#),
                Self.body("{}", #", "actions": [{"id": "pw_ack", "title": "Open", "url": "https://example.com/"}]"#),
            ]
            for body in combinations {
                let response = try await client.sendAction(token.bearer, body: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(try response.json()["field"] == "acknowledge", "\(body): \(String(buffer: response.body))")
            }
            // A scheduled send does not take acknowledge.
            let scheduled = try await client.post(
                "/notifications/scheduled",
                #"{"notification": \#(Self.body("{}")), "send_at": "\#(Date().addingTimeInterval(3_600).iso8601WithMilliseconds)"}"#,
                headers: token.bearer)
            #expect(scheduled.status == .badRequest)
            #expect(try scheduled.json()["field"] == "notification.acknowledge")
            // Critical alerts and time-sensitive ones repeat too.
            for level in ["critical", "time-sensitive"] {
                #expect(try await client.sendAction(token.bearer, body: Self.body("{}", #", "level": "\#(level)""#)).status == .created)
            }
        }
    }

    @Test func twentyFiveRepeatPerDeviceTheTwentySixthIs409UnlessItReplacesOne() async throws {
        try await TestServer().run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            for index in 0..<ReceiptRules.maximumActivePerDevice {
                let response = try await client.sendAction(token.bearer, body: Self.body("{}", #", "collapse_id": "k\#(index)""#))
                #expect(response.status == .created, "\(index)")
            }
            let refused = try await client.sendAction(token.bearer, body: Self.body("{}", #", "collapse_id": "k25""#))
            #expect(refused.status == .conflict)
            #expect(try refused.json()["code"] == "notification_receipt.limit_exceeded")
            // A plain send still goes; and one that replaces one of the 25 is taken.
            #expect(try await client.sendAction(token.bearer).status == .created)
            let replacing = try await client.sendAction(token.bearer, body: Self.body("{}", #", "collapse_id": "k0""#))
            #expect(replacing.status == .created)
            // Canceling one makes room.
            let receipt = try #require(try replacing.json()["receipt"]?.stringValue)
            #expect(try await client.post("/notifications/receipts/\(receipt)/cancel", "", headers: token.bearer).status == .ok)
            #expect(try await client.sendAction(token.bearer, body: Self.body("{}", #", "collapse_id": "k25""#)).status == .created)
        }
    }
}
