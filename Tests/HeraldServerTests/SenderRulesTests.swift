import Foundation
import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

/// The senders' pure rules, without a server: ntfy's parameters and action format, RFC 2047, forms, Bark's parameters,
/// Gotify's priorities and the generic preset's JSON paths.
@Suite("Sender rules")
struct SenderRulesTests {
    @Test(arguments: [
        ("1", 1), ("min", 1), ("2", 2), ("low", 2), ("3", 3), ("default", 3), ("", 3), ("4", 4), ("HIGH", 4), ("5", 5), ("max", 5),
        ("urgent", 5),
    ])
    func ntfyPriorities(text: String, priority: Int) throws {
        #expect(try NtfyMessage.priority(text) == priority)
    }

    @Test func ntfyPriorityLevelsAndRefusals() {
        #expect([1, 2, 3, 4, 5].map(NtfyMessage.level(priority:)) == [.passive, .passive, .active, .timeSensitive, .timeSensitive])
        for bad in ["0", "6", "9", "-1", "highest", "1.5", "NaN"] {
            #expect(throws: APIError.self) { try NtfyMessage.priority(bad) }
        }
    }

    @Test func gotifyPriorityLevels() {
        #expect((0...10).map(GotifyMessage.level(priority:)) == [
            .passive, .passive, .passive, .passive, .active, .active, .active, .active, .timeSensitive, .timeSensitive, .timeSensitive,
        ])
        #expect(throws: APIError.self) { try GotifyMessage.priority(11) }
        #expect(throws: APIError.self) { try GotifyMessage.priority(-1) }
    }

    @Test func encodedWordsAsNtfyDecodesThem() {
        #expect(EncodedWords.decode("=?UTF-8?B?8J+HqfCfh6o=?=") == "🇩🇪")
        #expect(EncodedWords.decode("=?UTF-8?Q?=C3=84pfel?=") == "Äpfel")
        #expect(EncodedWords.decode("=?utf-8?q?caf=C3=A9_au_lait?=") == "café au lait")
        #expect(EncodedWords.decode("=?UTF-8?B?8J+HqfCfh6o=?= =?UTF-8?Q?=C3=84pfel?=") == "🇩🇪Äpfel")
        #expect(EncodedWords.decode("Price: =?ISO-8859-1?Q?10=A4?=") == "Price: 10¤")
        // Not encoded words, or broken ones: left as they are.
        #expect(EncodedWords.decode("plain = text ?= here") == "plain = text ?= here")
        #expect(EncodedWords.decode("=?UTF-8?B?###?=") == "=?UTF-8?B?###?=")
        #expect(EncodedWords.decode("=?KOI8-R?B?8J+Hqg==?=") == "=?KOI8-R?B?8J+Hqg==?=")
        #expect(EncodedWords.decode("=?UTF-8?Q?=FF?=") == "=?UTF-8?Q?=FF?=")
    }

    @Test func ntfysShortActionFormat() throws {
        let actions = try NtfyAction.parse(
            header: #"view, Open portal, https://home.nest.com/, clear=true; http, "Turn down, now", https://api.nest.com/, method=PUT, headers.Authorization=Bearer zAzsx1sk, body='{"temp": 65}'"#)
        #expect(actions.count == 2)
        #expect(actions[0].kind == "view" && actions[0].label == "Open portal" && actions[0].clear)
        #expect(actions[0].herald.foreground && actions[0].herald.url == "https://home.nest.com/")
        #expect(actions[1].label == "Turn down, now" && actions[1].herald.method == "PUT" && actions[1].body == #"{"temp": 65}"#)
        #expect(actions[1].herald.headers == ["Authorization": "Bearer zAzsx1sk", "Content-Type": "application/json"])
        #expect(actions[1].herald.foreground == false)
        // The JSON form, and http's default method.
        let json = try NtfyAction.parse(header: #"[{"action": "http", "label": "Ack", "url": "http://ha.lan/ack"}]"#)
        #expect(json.first?.herald.method == "POST" && json.first?.herald.foreground == false)
        // A view of an http URL opens in the background (Herald's foreground actions are https).
        #expect(try NtfyAction.parse(header: "view, Open, http://nas.lan/").first?.herald.foreground == false)
    }

    @Test func ntfyActionRefusalsNameTheField() {
        func field(_ header: String) -> String? {
            do {
                _ = try NtfyAction.parse(header: header)
                return nil
            } catch {
                return (error as? APIError)?.field
            }
        }
        #expect(field("broadcast, Take picture, extras.cmd=pic") == "actions[0].action")
        #expect(field("copy, Copy, text") == "actions[0].action")
        #expect(field("view, Open") == "actions[0].url")
        #expect(field("view, Open, javascript:alert(1)") == "actions[0].url")
        #expect(field("view, A, https://a/; view, B, https://b/; view, C, https://c/; view, D, https://d/") == "actions")
        #expect(field("[{\"action\": ") == "actions")
        #expect(field("http, Go, https://a/, method=TRACE") == "actions[0].method")
        #expect(field("view, \(String(repeating: "x", count: 65)), https://a/") == "actions[0].label")
    }

    @Test func formsAndMultipart() {
        #expect(SenderRequest.pairs("title=Hello+there&Body=a%26b&empty=&flag&title=second") == [
            "title": "Hello there", "body": "a&b", "empty": "", "flag": "",
        ])
        let body = Array("--b\r\nContent-Disposition: form-data; name=\"Message\"\r\n\r\nline 1\r\nline 2\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\n\u{1}\u{2}\r\n--b--\r\n".utf8)
        #expect(MultipartForm.fields(body, boundary: "b") == ["message": "line 1\r\nline 2"])
        #expect(MultipartForm.boundary(of: "multipart/form-data; boundary=\"abc\"") == "abc")
        #expect(MultipartForm.boundary(of: "multipart/form-data") == nil)
        #expect(MultipartForm.fields(Array("no parts at all".utf8), boundary: "b").isEmpty)
    }

    @Test func theBodyKindDecidesBarkOrNtfy() {
        func input(_ body: String, _ contentType: String?) -> SenderRequest {
            var headers = HTTPFields()
            if let contentType { headers[.contentType] = contentType }
            return SenderRequest(body: Array(body.utf8), headers: headers, query: [:])
        }
        #expect(SenderPathMiddleware<HeraldRequestContext>.isBark(input("body=Hi&title=T", "application/x-www-form-urlencoded")))
        #expect(SenderPathMiddleware<HeraldRequestContext>.isBark(input(#"{"body": "Hi"}"#, "application/json")))
        #expect(SenderPathMiddleware<HeraldRequestContext>.isBark(input(#" {"body": "Hi"}"#, nil)))
        #expect(!SenderPathMiddleware<HeraldRequestContext>.isBark(input("Backup done", "application/x-www-form-urlencoded")))
        #expect(!SenderPathMiddleware<HeraldRequestContext>.isBark(input(#"{"message": "Hi"}"#, "application/json")))
        #expect(!SenderPathMiddleware<HeraldRequestContext>.isBark(input(#"["body"]"#, "application/json")))
        #expect(!SenderPathMiddleware<HeraldRequestContext>.isBark(input("body", "text/plain")))
    }

    @Test func barkParametersAndTheirRules() throws {
        let message = try BarkMessage(
            parameters: ["title": "query title", "body": "query body", "level": "timeSensitive", "badge": "7", "group": "g", "id": "x"],
            pathTitle: "path title", pathBody: "path body")
        #expect(message.title == "path title" && message.body == "path body" && message.level == .timeSensitive && message.badge == 7)
        #expect(message.draft.collapseID == "x" && message.draft.content.thread == "g")
        #expect(try BarkMessage(parameters: ["body": "b", "level": "critical"]).draft.isExemptFromQuota)
        #expect(try BarkMessage(parameters: ["body": "b", "sound": "minuet"]).draft.content.sound == .named("minuet.caf"))
        #expect(try BarkMessage(parameters: [:], pathTitle: "", pathBody: "only").title == nil)
        for bad: [String: String] in [[:], ["body": "b", "level": "loud"], ["body": "b", "level": ""], ["body": "b", "badge": "1e9"],
            ["body": "b", "url": "javascript:x"], ["body": "b", "image": "ftp://x/a.png"], ["body": "b", "id": String(repeating: "i", count: 65)]]
        {
            #expect(throws: APIError.self, "\(bad)") { try BarkMessage(parameters: bad) }
        }
        #expect(try BarkMessage.parameters(json: ["Title": "T", "badge": 3, "isArchive": true, "extra": ["x"], "sound": nil]) == [
            "title": "T", "badge": "3", "isarchive": "1",
        ])
        #expect(throws: APIError.self) { try BarkMessage.parameters(json: ["body": ["not", "text"]]) }
    }

    @Test func genericPresetPaths() throws {
        let root: JSONValue = ["a": ["b": [["c": "deep"], ["c": 42]]], "flag": true, "n": .null]
        #expect(try GenericPreset.value(at: "$.a.b[0].c", in: root, parameter: "body") == "deep")
        #expect(try GenericPreset.value(at: "a.b[1].c", in: root, parameter: "body") == "42")
        #expect(try GenericPreset.value(at: "flag", in: root, parameter: "body") == "true")
        #expect(try GenericPreset.value(at: "$.a.b[2].c", in: root, parameter: "body") == nil)
        #expect(try GenericPreset.value(at: "$.missing", in: root, parameter: "body") == nil)
        #expect(try GenericPreset.value(at: "$.n", in: root, parameter: "body") == nil)
        #expect(try GenericPreset.value(at: "$.a", in: root, parameter: "body") == nil)
        #expect(throws: APIError.self) { try GenericPreset.value(at: "$.a.b[x]", in: root, parameter: "body") }
        #expect(throws: APIError.self) { try GenericPreset.value(at: "$.a.b[-1]", in: root, parameter: "body") }
        #expect(throws: APIError.self) { try GenericPreset.value(at: String(repeating: "a.", count: 200), in: root, parameter: "body") }
    }

    @Test func alertPresetCountsAndCollapse() throws {
        let firing: JSONObject = [
            "status": "firing", "groupKey": "k", "groupLabels": ["alertname": "A"],
            "alerts": [["status": "firing", "labels": ["severity": "warning"]], ["status": "resolved", "annotations": ["summary": "s"]]],
        ]
        let preset = try AlertPreset(firing, flavor: .alertmanager)
        #expect(preset.title == "[FIRING:1] A" && preset.level == .active)
        #expect(preset.body == "2 alerts, 1 firing:\n• alert (firing)\n• s (resolved)")
        #expect(preset.collapseID == "alert-" + Secrets.hash("k").prefix(32))
        // Without a group key, a single alert's fingerprint; several alerts without one: no collapse id.
        #expect(try AlertPreset(["alerts": [["fingerprint": "f"]]], flavor: .alertmanager).collapseID == "alert-" + Secrets.hash("f").prefix(32))
        #expect(try AlertPreset(["alerts": [[:], [:]]], flavor: .alertmanager).collapseID == nil)
        #expect(throws: APIError.self) { try AlertPreset(["status": "pending", "alerts": []], flavor: .grafana) }
    }
}
