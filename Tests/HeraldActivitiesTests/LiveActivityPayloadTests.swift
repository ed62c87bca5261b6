import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The `aps` document of each event, the timestamp's order and the 4096-byte fitting.
@Suite("Live Activity payload")
struct LiveActivityPayloadTests {
    func render(_ outcome: ActivityOutcome, timestamp: Int = 1_750_000_000) throws -> [UInt8] {
        try LiveActivityPayload.render(activity: outcome.activity!, push: outcome.push!, timestamp: timestamp, now: testNow)
    }

    @Test func aStartCarriesAttributesTheAlertAndAnUpdateTokenRequest() throws {
        let outcome = try patched(
            freshActivity(priority: 3), #"{"state":"ongoing","stale_ttl":600,"content":{"template":"generic","progress":0.65,"state":"Washing"}}"#)
        let document = try aps(try render(outcome))
        #expect(document["event"] == "start")
        #expect(document["timestamp"] == .int(1_750_000_000))
        #expect(document["attributes-type"] == "HeraldActivityAttributes")
        #expect(document["attributes"] == ["slug": "dishwasher", "name": "Dishwasher"])
        #expect(document["input-push-token"] == 1)
        #expect(document["relevance-score"] == .double(0.3))
        #expect(document["alert"] == ["title": "Dishwasher", "body": "Washing"])
        #expect(document["stale-date"] == .int(1_750_000_600))
        #expect(document["dismissal-date"] == nil)
        #expect(document["content-state"] == .object(outcome.activity!.content))
        let custom = try LiveActivityPayload.render(
            activity: outcome.activity!, push: outcome.push!, timestamp: 1, attributesType: "MyAttributes", now: testNow)
        #expect(try aps(custom)["attributes-type"] == "MyAttributes")
    }

    @Test func aSilentUpdateHasNoAlertNorAttributesAndAnEndHasItsDismissalDate() throws {
        let started = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"generic","progress":0.1}}"#).activity)
        let update = try aps(try render(try patched(started, #"{"content":{"progress":0.2}}"#)))
        #expect(update["event"] == "update")
        for key in ["alert", "sound", "attributes", "attributes-type", "input-push-token", "dismissal-date", "stale-date"] {
            #expect(update[key] == nil, "\(key)")
        }
        #expect(update["relevance-score"]?.doubleValue == 0)
        let alerting = try aps(try render(try patched(started, #"{"sound":"bell","content":{"state":"Rinsing"}}"#)))
        #expect(alerting["sound"] == "bell")
        #expect(alerting["alert"] == ["title": "Dishwasher", "body": "Rinsing"])
        let end = try aps(try render(try patched(started, #"{"state":"ended","dismissal_ttl":60}"#)))
        #expect(end["event"] == "end")
        #expect(end["dismissal-date"] == .int(1_750_000_060))
    }

    @Test func theLegacyURLIsLeftOutBesideItsActionAndAnEndedMediaCardIsStopped() throws {
        let alert = try patched(
            freshActivity(),
            #"{"state":"ongoing","content":{"template":"alert","severity":"info","url":"https://a.example/1","url_action":{"url":"https://a.example/2"},"secondary_url":"https://a.example/3"}}"#
        )
        let state = try #require(try aps(try render(alert))["content-state"]?.objectValue)
        #expect(state["url"] == nil)
        #expect(state["secondary_url"] == "https://a.example/3")
        #expect(alert.activity?.content["url"] == "https://a.example/1", "the stored content keeps it")
        let media = try #require(try patched(freshActivity(), TemplateExampleTests.mediaStart).activity)
        let end = try aps(try render(try patched(media, #"{"state":"ended"}"#)))
        #expect(end["content-state"]?.objectValue?["playback_state"] == "stopped")
    }

    @Test func timestampsIncreaseStrictlyEvenWithinOneSecond() {
        let first = LiveActivityTimestamp.next(after: nil, now: testNow.addingTimeInterval(0.2))
        #expect(first == 1_750_000_000)
        let second = LiveActivityTimestamp.next(after: first, now: testNow.addingTimeInterval(0.7))
        #expect(second == 1_750_000_001)
        #expect(LiveActivityTimestamp.next(after: second, now: testNow.addingTimeInterval(0.9)) == 1_750_000_002)
        #expect(LiveActivityTimestamp.next(after: 1_750_000_002, now: testNow.addingTimeInterval(10)) == 1_750_000_010)
        #expect(LiveActivityTimestamp.next(after: .max, nowSeconds: 1) == .max, "no overflow trap")
    }

    @Test func aLongTimelineIsDownsampledToFitKeepingEachSeriesEnds() throws {
        var activity = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"timeline","value":{"series0":0}}}"#).activity)
        let series = (0..<10).map { "series\($0)" }
        for step in 1...300 {
            let values = series.map { #""\#($0)":\#(Double(step) * 1.5 + Double($0.count))"# }.joined(separator: ",")
            activity = try #require(try patched(activity, #"{"content":{"value":{\#(values)}}}"#, at: testNow.addingTimeInterval(Double(step))).activity)
        }
        let outcome = try patched(activity, #"{"content":{"state":"x"}}"#, at: testNow.addingTimeInterval(400))
        let payload = try render(outcome)
        #expect(payload.count <= LiveActivityPayload.maximumBytes)
        let history = try #require(try aps(payload)["content-state"]?.objectValue?["history"]?.objectValue)
        let points = try #require(history["series3"]?.arrayValue)
        #expect(points.count >= 2 && points.count < 300)
        #expect(points.last?.objectValue?["timestamp"] == .int(1_750_000_300), "the newest point is kept")
        #expect(outcome.activity?.content["history"]?.objectValue?["series3"]?.arrayValue?.count == 300, "stored history untouched")
    }

    @Test func mediaDropsWholeControlsInPushWardsOrderAndKeepsTheirHeaders() throws {
        let header = String(repeating: "k", count: 200)
        func control(_ name: String) -> String {
            #""\#(name)":{"url":"https://ha.example/\#(name)","headers":{"Authorization":"Bearer \#(header)"},"body":"\#(header)"}"#
        }
        let slots = ["previous", "play_pause", "next", "stop", "favorite", "volume_down", "volume_up"].map(control).joined(separator: ",")
        let extra = (0..<3).map { #"{"url":"https://ha.example/x\#($0)","icon":"shuffle","body":"\#(header)"}"# }.joined(separator: ",")
        let body =
            #"{"state":"ongoing","content":{"template":"media","media_title":"Snooze","playback_state":"playing","image_url":"https://cdn.example.com/a.jpg","image_thumbhash":"m8QN","controls":{\#(slots),"extra":[\#(extra)]}}}"#
        let outcome = try patched(freshActivity(), body)
        let payload = try render(outcome)
        #expect(payload.count <= LiveActivityPayload.maximumBytes)
        let state = try #require(try aps(payload)["content-state"]?.objectValue)
        let controls = try #require(state["controls"]?.objectValue)
        // PushWard's order; what was dropped is a prefix of it, and at least `extra` had to go.
        let order: [(String, Bool)] = [
            ("extra", controls["extra"] == nil), ("volume", controls["volume_down"] == nil && controls["volume_up"] == nil),
            ("favorite", controls["favorite"] == nil), ("stop", controls["stop"] == nil), ("image_thumbhash", state["image_thumbhash"] == nil),
            ("image_url", state["image_url"] == nil), ("previous+next", controls["previous"] == nil && controls["next"] == nil),
        ]
        let dropped = order.prefix { $0.1 }.count
        #expect(dropped >= 1)
        #expect(order.dropFirst(dropped).allSatisfy { !$0.1 }, "nothing dropped out of order: \(order)")
        #expect(controls["play_pause"]?.objectValue?["headers"] != nil, "a surviving control keeps its headers")
        #expect(controls["play_pause"]?.objectValue?["body"] != nil)
        let smaller = try #require(
            try patched(outcome.activity!, #"{"content":{"controls":{"extra":null,"volume_down":null,"volume_up":null}}}"#).activity)
        let fitted = try LiveActivityPayload.render(activity: smaller, push: ActivityPush(event: .update), timestamp: 1, now: testNow)
        #expect(try aps(fitted)["content-state"]?.objectValue?["controls"]?.objectValue?["favorite"] != nil, "the next in line stays while it fits")
        #expect(outcome.activity?.content["controls"]?.objectValue?["extra"] != nil, "the stored content keeps every control")
    }

    @Test func aLogKeepsTheNewestLinesThatFit() throws {
        let lines = (0..<20).map { #"{"text":"\#(String(repeating: "\($0 % 10)", count: 400))"}"# }.joined(separator: ",")
        let outcome = try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"log","lines":[\#(lines)]}}"#)
        let payload = try render(outcome)
        #expect(payload.count <= LiveActivityPayload.maximumBytes)
        let sent = try #require(try aps(payload)["content-state"]?.objectValue?["lines"]?.arrayValue)
        #expect(sent.count < 20 && sent.count > 1)
        #expect(sent.first?.objectValue?["text"]?.stringValue?.hasPrefix("0") == true, "the newest line first")
    }

    @Test func contentThatCannotBeReducedIsTooLargeAndAPatchThatMakesItSoIsRefused() throws {
        let blob = String(repeating: "z", count: 5_000)
        var activity = freshActivity()
        activity.content = ["template": "generic", "note": .string(blob)]
        #expect(throws: LiveActivityPayload.TooLarge.self) {
            _ = try LiveActivityPayload.render(activity: activity, push: ActivityPush(event: .update), timestamp: 1, now: testNow)
        }
        #expect {
            _ = try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"generic","note":"\#(blob)"}}"#)
        } throws: { ($0 as? ActivityProblem)?.code == .activityContentInvalid && ($0 as? ActivityProblem)?.status == 422 }
    }
}
