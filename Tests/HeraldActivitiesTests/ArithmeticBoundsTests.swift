import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldActivities

/// Issue 37: no number a client sends, and nothing a stored activity holds, can make the rules trap; what is out of
/// range is a 422 naming the member.
@Suite("Activity rules: arithmetic bounds")
struct ArithmeticBoundsTests {
    @Test func durationTextsAreSummedWithOverflowChecks() throws {
        #expect(try DurationText.seconds("1h30m") == 5_400)
        #expect(try DurationText.seconds("1500") == 1_500)
        #expect(try DurationText.seconds(.int(60)) == 60)
        #expect(try DurationText.seconds(.double(60)) == 60)
        #expect(try DurationText.seconds("1826d") == 157_766_400)
        #expect(try DurationText.seconds(.int(157_788_000)) == 157_788_000)
        for tooLong: JSONValue in [
            .int(Int.max), .int(157_788_001), "99999999999999999999d", "106751991167300d", "9223372036854775807s9223372036854775807s",
            "1000000000d1000000000d", "1827d", .double(1e300),
        ] {
            #expect(throws: DurationText.Refusal.tooLong, "\(tooLong)") { try DurationText.seconds(tooLong) }
        }
        for malformed: JSONValue in [.int(0), .int(-5), .int(Int.min), "", "5x", "1h30", "h", .double(1.5), .bool(true), .string(String(repeating: "1", count: 10_000))] {
            #expect(throws: DurationText.Refusal.self, "\(malformed)") { try DurationText.seconds(malformed) }
        }
    }

    @Test func aDurationOfIntMaxIsRefusedAtItsMember() throws {
        let activity = freshActivity()
        for duration in ["9223372036854775807", #""999999999999d""#] {
            #expect {
                _ = try patched(activity, #"{"content": {"template": "countdown", "duration": \#(duration)}}"#)
            } throws: { error in
                (error as? ActivityProblem)?.fieldErrors.first?.location == "body.content.duration"
            }
        }
    }

    @Test func aSnoozeOfACountdownStoredNearIntMaxIsRefusedNotTrapped() throws {
        // A row stored before dates were bounded: end_date near Int.max, snooze_seconds out of range.
        var stored = try #require(try patched(freshActivity(), #"{"state": "ongoing", "content": {"template": "countdown", "end_date": 2000000000}}"#,
            device: ActivityDeviceFacts(activityCount: 1, canPushToStart: true)).activity)
        stored.content["end_date"] = .int(Int.max - 10)
        stored.content["snooze_seconds"] = .int(Int.max)
        stored.content["warning_threshold"] = .int(Int.min)
        for seconds in [nil, 3_600] as [Int?] {
            #expect {
                _ = try ActivityRules().snooze(stored, by: seconds, now: testNow)
            } throws: { error in
                (error as? ActivityProblem)?.fieldErrors.first?.location == "body.seconds"
            }
        }
        // At the latest date there is no room for a snooze either; a minute before the end of 9999 there is.
        stored.content["end_date"] = .int(ActivityLimits.latestUnixSeconds - 3_600)
        stored.content["warning_threshold"] = .int(60)
        let snoozed = try ActivityRules().snooze(stored, by: 3_600, now: testNow)
        #expect(snoozed.activity?.content["end_date"] == .int(ActivityLimits.latestUnixSeconds))
    }

    @Test func theCountdownWarningOfARowStoredNearIntMaxDoesNotTrap() throws {
        var stored = try #require(try patched(freshActivity(), #"{"state": "ongoing", "content": {"template": "countdown", "end_date": 2000000000, "warning_threshold": 600}}"#,
            device: ActivityDeviceFacts(activityCount: 1, canPushToStart: true)).activity)
        stored.content["end_date"] = .int(Int.max)
        stored.content["warning_threshold"] = .int(Int.max)
        let due = ActivityDue(kind: .countdownWarning, at: Date(timeIntervalSince1970: 0))
        let outcome = ActivityRules().run(due, on: stored, now: testNow)
        if let body = outcome?.push?.alert?.body { #expect(body.hasSuffix("minutes left")) }
    }

    @Test func aGaugeWhoseProgressIsNotFiniteIsRefused() throws {
        #expect {
            _ = try patched(freshActivity(), #"{"content": {"template": "gauge", "value": 0, "min_value": -1e308, "max_value": 1e308}}"#)
        } throws: { error in
            (error as? ActivityProblem)?.fieldErrors.first?.location == "body.content.max_value"
        }
    }

    @Test func anActivityThatCannotBeEncodedIsAnErrorNotAnEmptyDocument() {
        var activity = freshActivity()
        activity.content["progress"] = .double(.nan)
        #expect(throws: EncodingError.self) { try activity.storedJSON() }
        #expect(throws: EncodingError.self) { try activity.storedParts() }
        #expect(throws: (any Error).self) { try ActivityJSON.body(activity) }
    }

    @Test func theStoredPartsKeepHistoryAndBacklogApartAndReadBackTheSame() throws {
        var timeline = try #require(try patched(freshActivity(), #"{"content": {"template": "timeline", "value": {"t": 20.5}}}"#).activity)
        timeline = try #require(try patched(timeline, #"{"content": {"value": {"t": 21}}}"#, at: testNow.addingTimeInterval(60)).activity)
        let parts = try timeline.storedParts()
        #expect(!String(decoding: parts.document, as: UTF8.self).contains("timestamp"))
        #expect(String(decoding: try #require(parts.extras), as: UTF8.self).contains("timestamp"))
        #expect(try Activity(storedDocument: parts.document, extras: parts.extras) == timeline)
        // Read without its extras (an eviction candidate): no history, the rest the same.
        let slim = try Activity(storedDocument: parts.document, extras: nil as [UInt8]?)
        #expect(slim.memory.timelineHistory.isEmpty && slim.content["history"] == nil && slim.name == timeline.name)
        // A document from before the split reads as it always did.
        #expect(try Activity(storedDocument: timeline.storedJSON(), extras: nil as [UInt8]?) == timeline)
        #expect(try freshActivity().storedParts().extras == nil)
    }

    @Test func extrasWrittenByTheEarlierCodableEncoderReadTheSame() throws {
        // What `JSONEncoder` (sorted keys) wrote before the extras went through Herald's own JSON text.
        let earlier = #"{"log_backlog":[{"level":"info","text":"b\u00e9"}],"timeline_history":{"t":[{"timestamp":5,"value":2},{"timestamp":6,"value":2.5}]}}"#
        let read = try Activity(storedDocument: freshActivity().storedJSON(), extras: Array(earlier.utf8))
        #expect(read.memory.logBacklog == [["level": "info", "text": "bé"]])
        #expect(read.memory.timelineHistory == ["t": [TimelinePoint(timestamp: 5, value: 2), TimelinePoint(timestamp: 6, value: 2.5)]])
        let again = try Activity(storedDocument: read.storedParts().document, extras: read.storedParts().extras)
        #expect(again.memory == read.memory)
        #expect(throws: (any Error).self) { try Activity(storedDocument: freshActivity().storedJSON(), extras: Array(#"{"log_backlog":{}}"#.utf8)) }
    }

    @Test func anUpdateDoesNotReadTheDevicesOtherActivities() throws {
        let reads = Mutex(0)
        let facts = ActivityDeviceFacts(
            readingOngoing: {
                reads.withLock { $0 += 1 }
                return []
            }, activityCount: 1, canPushToStart: true)
        let started = try #require(try patched(freshActivity(), #"{"state": "ongoing", "content": {"template": "generic", "progress": 0.5}}"#).activity)
        #expect(started.state == .ongoing)
        _ = try patched(started, #"{"content": {"progress": 0.6}}"#, device: facts)
        #expect(reads.withLock { $0 } == 0)
    }

    @Test func theLogBacklogIsBoundedInBytesAsWellAsLines() {
        func line(_ index: Int) -> JSONValue { ["text": .string("\(index) " + String(repeating: "é", count: 500)), "level": "info"] }
        var backlog: [JSONValue] = []
        for index in 0..<600 { backlog = LogBacklog.merging([line(index)], into: backlog) }
        let bytes = backlog.map(LogBacklog.approximateBytes(of:)).reduce(0, +)
        #expect(bytes <= LogBacklog.maximumBytes)
        #expect(backlog.count < 600)
        #expect(backlog.first == line(599))
    }
}
