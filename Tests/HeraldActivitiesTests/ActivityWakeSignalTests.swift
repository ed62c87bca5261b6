import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The dispatcher's wake-up: a wake ends the wait at once, and one that came while nobody waited is kept.
@Suite("Activity wake signal")
struct ActivityWakeSignalTests {
    @Test func aWakeBeforeTheWaitEndsItAtOnceAndOnlyOnce() async {
        let signal = ActivityWakeSignal()
        signal.wake()
        signal.wake()
        await signal.wait(upTo: .seconds(3_600))  // would hang the test if the wake were lost
        let second = Task { await signal.wait(upTo: .seconds(3_600)) }
        signal.wake()  // ends the second wait, whether it began yet or not
        await second.value
    }

    @Test func aWaitEndsWhenItsTimeIsUp() async {
        let signal = ActivityWakeSignal()
        await signal.wait(upTo: .milliseconds(1))
    }

    @Test func aCancelledWaitEnds() async {
        let signal = ActivityWakeSignal()
        let waiting = Task { await signal.wait(upTo: .seconds(3_600)) }
        waiting.cancel()
        await waiting.value
    }
}

/// The one typed Live Activity message: its `aps`, its content, and reading one back (the APNs double's checks).
@Suite("Live Activity message")
struct LiveActivityMessageTests {
    @Test func theMessageWritesItsAPSAndItsContentWithoutBytesInBetween() {
        let message = LiveActivityMessage(
            event: .start, timestamp: 1_750_000_000, contentState: ["progress": 0.5], staleDate: .int(1_750_000_600),
            relevanceScore: .double(0.3), alert: ["title": "Oven", "body": "Baking"], sound: "default", attributesType: "A",
            attributes: ["slug": "oven"], asksForPushToken: true)
        #expect(
            message.aps == [
                "timestamp": 1_750_000_000, "event": "start", "content-state": ["progress": 0.5], "stale-date": 1_750_000_600,
                "relevance-score": 0.3, "alert": ["title": "Oven", "body": "Baking"], "sound": "default", "attributes-type": "A",
                "attributes": ["slug": "oven"], "input-push-token": 1,
            ])
        let content = message.content()
        #expect(content.title == "Oven")
        #expect(content.body == "Baking")
        #expect(content.providerPayloads["apns"]?.payload == ["aps": .object(message.aps)])
        #expect(LiveActivityMessage(aps: message.aps) == message, "read back as it was written")
        #expect(LiveActivityMessage(aps: ["timestamp": 1, "event": "pause"]) == nil)
        #expect(LiveActivityMessage(aps: ["timestamp": "1", "event": "end"]) == nil)
    }

    /// The size bound that spares an encoding: never below the text's size, exact without doubles.
    @Test func theSizeBoundIsNeverBelowTheEncodedSizeAndExactWithoutDoubles() throws {
        let exact: JSONValue = [
            "s": "a \"quoted\" \\ line\n\u{1}é", "i": -1_234, "z": 0, "b": true, "f": false, "n": nil, "a": [1, "x", [:]], "o": [:], "e": [],
        ]
        #expect(exact.encodedSizeUpperBound == (try exact.encoded()).count)
        for double in [0.1, -2.2250738585072014e-308, 1e300, 123_456.789, 0.3] {
            let value: JSONValue = ["d": .double(double)]
            #expect(value.encodedSizeUpperBound >= (try value.encoded()).count)
        }
        let payload = try LiveActivityPayload.render(
            activity: freshActivity(), push: ActivityPush(event: .start, alert: ActivityAlert(title: "T", body: "B")), timestamp: 1, now: testNow)
        let message = try LiveActivityPayload.message(
            activity: freshActivity(), push: ActivityPush(event: .start, alert: ActivityAlert(title: "T", body: "B")), timestamp: 1, now: testNow)
        #expect(JSONValue.object(message.payload).encodedSizeUpperBound >= payload.count)
        #expect(Array(try JSONValue.object(message.payload).encoded()) == payload, "the message is the payload render writes")
    }
}
