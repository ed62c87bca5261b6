import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// What the server fills in or keeps: gauge progress, durations, template switches, media defaults, timeline history,
/// the log backlog.
@Suite("Server-computed content")
struct ServerComputedTests {
    @Test func gaugeProgressIsComputedFromValueAndRange() throws {
        let gauge = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"gauge","value":125,"min_value":0,"max_value":250,"progress":0.9}}"#)
                .activity)
        #expect(gauge.content["progress"] == .double(0.5), "a client's progress is overwritten")
        let moved = try patched(gauge, #"{"content":{"value":50}}"#)
        #expect(moved.activity?.content["progress"] == .double(0.2))
    }

    @Test func durationBecomesStartAndEndDateAndEndDateWins() throws {
        let timer = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"countdown","duration":"1h30m"}}"#).activity)
        #expect(timer.content["start_date"] == .int(1_750_000_000))
        #expect(timer.content["end_date"] == .int(1_750_005_400))
        #expect(timer.content["duration"] == nil, "duration is converted, never stored")
        let both = try patched(timer, #"{"content":{"duration":60,"end_date":1750009999}}"#, at: testNow.addingTimeInterval(5))
        #expect(both.activity?.content["end_date"] == .int(1_750_009_999))
        #expect(both.activity?.content["start_date"] == .int(1_750_000_000), "an end_date alone keeps the stored start_date")
        for (text, seconds) in [("30s", 30), ("5m", 300), ("1500", 1500), ("2h", 7200)] {
            let outcome = try patched(freshActivity(), #"{"content":{"template":"countdown","duration":"\#(text)"}}"#)
            #expect(outcome.activity?.content["end_date"] == .int(1_750_000_000 + seconds))
        }
    }

    @Test func switchingTemplatesDropsInheritedImageAndMediaFieldsButRefusesSentOnes() throws {
        let generic = try #require(
            try patched(
                freshActivity(),
                #"{"state":"ongoing","content":{"template":"generic","image_url":"https://a.example/p.jpg","image_thumbhash":"GYpS","progress":0.3}}"#
            ).activity)
        let alert = try #require(try patched(generic, #"{"content":{"template":"alert","severity":"info"}}"#).activity)
        #expect(alert.content["image_url"] == nil)
        #expect(alert.content["image_thumbhash"] == nil)
        #expect(throws: ActivityProblem.self) {
            _ = try patched(generic, #"{"content":{"template":"alert","severity":"info","image_url":"https://a.example/q.jpg"}}"#)
        }
        let media = try #require(try patched(freshActivity(), TemplateExampleTests.mediaStart).activity)
        let back = try #require(try patched(media, #"{"content":{"template":"generic"}}"#).activity)
        for field in ["media_title", "playback_state", "position_seconds", "duration_seconds", "volume", "favorite", "controls", "position_at"] {
            #expect(back.content[field] == nil, "\(field) is cleared")
        }
        #expect(back.content["image_url"] != nil, "generic has an image slot")
    }

    @Test func stepsArraysOfAnEarlierRunAreDroppedWhenTotalStepsChanges() throws {
        let run = try #require(
            try patched(
                freshActivity(),
                #"{"state":"ongoing","content":{"template":"steps","current_step":1,"total_steps":3,"step_labels":["a","b","c"],"step_rows":[1,2,1]}}"#
            ).activity)
        let next = try #require(try patched(run, #"{"content":{"current_step":1,"total_steps":4,"step_rows":[1,1,1,1]}}"#).activity)
        #expect(next.content["step_labels"] == nil)
        #expect(next.content["step_rows"] == [1, 1, 1, 1])
        #expect(throws: ActivityProblem.self) { _ = try patched(run, #"{"content":{"total_steps":4,"step_labels":["a"]}}"#) }
    }

    @Test func mediaControlsGetPOSTAndPositionIsStamped() throws {
        let media = try #require(try patched(freshActivity(), TemplateExampleTests.mediaStart).activity)
        let controls = try #require(media.content["controls"]?.objectValue)
        #expect(controls["next"]?.objectValue?["method"] == "POST")
        #expect(controls["extra"]?.arrayValue?.first?.objectValue?["method"] == "POST")
        #expect(media.content["position_at"] == .int(1_750_000_000))
        #expect(media.content["progress"] == .double(47.5 / 214))
        let withoutStop = try #require(try patched(media, #"{"content":{"controls":{"stop":null,"next":{"url":"spotify:next"}}}}"#).activity)
        let merged = try #require(withoutStop.content["controls"]?.objectValue)
        #expect(merged["stop"] == nil)
        #expect(merged["next"] == ["url": "spotify:next"], "a slot sent replaces the stored one; a custom scheme gets no method")
        #expect(merged["previous"] != nil)
    }

    @Test func timelineHistoryAccumulatesPerSeriesAndASeedIsHonouredOnlyFirst() throws {
        let seeded = try #require(
            try patched(
                freshActivity(),
                #"{"state":"ongoing","content":{"template":"timeline","value":{"cpu":3},"history":{"cpu":[{"timestamp":1749999900,"value":1},{"timestamp":1749999950,"value":2}]}}}"#
            ).activity)
        #expect(seeded.memory.timelineHistory["cpu"]?.map(\.value) == [1, 2, 3])
        var activity = seeded
        for step in 1...400 {
            activity = try #require(
                try patched(
                    activity, #"{"content":{"value":{"cpu":\#(step),"gpu":1},"history":{"cpu":[]}}}"#, at: testNow.addingTimeInterval(Double(step))
                ).activity)
        }
        #expect(activity.memory.timelineHistory["cpu"]?.count == TimelineHistory.maximumPointsPerSeries)
        #expect(activity.memory.timelineHistory["cpu"]?.last == TimelinePoint(timestamp: 1_750_000_400, value: 400))
        #expect(activity.memory.timelineHistory["gpu"]?.count == 300)
        #expect(activity.content["history"]?.objectValue?["cpu"]?.arrayValue?.count == 300, "GET shows the full history")
        let noValue = try #require(try patched(activity, #"{"content":{"state":"Idle"}}"#).activity)
        #expect(noValue.memory.timelineHistory["cpu"]?.count == 300)
        #expect(noValue.memory.timelineHistory["cpu"]?.last?.value == 400, "no value sent, no point appended")
    }

    @Test func logLinesRollIntoABacklogOfAThousand() throws {
        func lines(_ range: ClosedRange<Int>) -> String {
            range.reversed().map { #"{"text":"line \#($0)"}"# }.joined(separator: ",")
        }
        var activity = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"log","lines":[\#(lines(1...3))]}}"#).activity)
        #expect(activity.memory.logBacklog.count == 3)
        activity = try #require(try patched(activity, #"{"content":{"lines":[\#(lines(2...5))]}}"#).activity)
        #expect(activity.memory.logBacklog.map { $0.objectValue?["text"]?.stringValue } == ["line 5", "line 4", "line 3", "line 2", "line 1"])
        for start in stride(from: 6, through: 1_200, by: 20) {
            activity = try #require(try patched(activity, #"{"content":{"lines":[\#(lines(start...start + 19))]}}"#).activity)
        }
        #expect(activity.memory.logBacklog.count == LogBacklog.maximumLines)
        #expect(activity.memory.logBacklog.first?.objectValue?["text"] == "line 1205")
        #expect(activity.content["log_backlog"] == nil, "the backlog is not content")
    }
}
