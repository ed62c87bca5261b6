import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// Content that breaks a template's rules is 422 `activity.content_invalid`, with the member's location.
@Suite("Template rules that refuse")
struct TemplateRefusalTests {
    static let refused: [(body: String, location: String)] = [
        (#"{"template":"generic","progress":1.5}"#, "body.content.progress"),
        (#"{"template":"generic","progress":0.5,"live_progress":true}"#, "body.content.live_progress"),
        (#"{"template":"generic","alarm":true}"#, "body.content.alarm"),
        (#"{"template":"generic","image_url":"http://images.example.com/a.jpg"}"#, "body.content.image_url"),
        (#"{"template":"generic","image_url":"https://user:pw@images.example.com/a.jpg"}"#, "body.content.image_url"),
        (#"{"template":"generic","image_shape":"hexagon"}"#, "body.content.image_shape"),
        (#"{"template":"generic","start_date":1750003600,"end_date":1750000000}"#, "body.content.start_date"),
        (#"{"template":"generic","state":"\#(String(repeating: "x", count: 257))"}"#, "body.content.state"),
        (#"{"template":"generic","icon":"\#(String(repeating: "x", count: 129))"}"#, "body.content.icon"),
        (#"{"template":"generic","remaining_time":-1}"#, "body.content.remaining_time"),
        (#"{"template":"generic","progress":"half"}"#, "body.content.progress"),
        (#"{"template":"generic","tap_action":{"url":"javascript:alert(1)"}}"#, "body.content.tap_action.url"),
        (#"{"template":"generic","url_action":{"url":"https:///nohost"}}"#, "body.content.url_action.url"),
        (#"{"template":"generic","url_action":{"url":"https://a.example","method":"TRACE"}}"#, "body.content.url_action.method"),
        (#"{"template":"generic","url_action":{"url":"https://a.example","body":"\#(String(repeating: "b", count: 1025))"}}"#, "body.content.url_action.body"),
        (
            #"{"template":"generic","url_action":{"url":"https://a.example","headers":{"X":"\#(String(repeating: "h", count: 1024))"}}}"#,
            "body.content.url_action.headers"
        ),
        (#"{"template":"generic","secondary_url_action":{"title":"no url"}}"#, "body.content.secondary_url_action.url"),
        (#"{"template":"countdown","progress":0}"#, "body.content.end_date"),
        (#"{"template":"countdown","duration":"soon"}"#, "body.content.duration"),
        (#"{"template":"countdown","duration":"5m","warning_threshold":-1}"#, "body.content.warning_threshold"),
        (#"{"template":"countdown","duration":60,"completion_message":"\#(String(repeating: "m", count: 513))"}"#, "body.content.completion_message"),
        (#"{"template":"countdown","duration":60,"snooze_seconds":30}"#, "body.content.snooze_seconds"),
        (#"{"template":"countdown","end_date":-5}"#, "body.content.end_date"),
        (#"{"template":"steps","current_step":1}"#, "body.content.total_steps"),
        (#"{"template":"steps","current_step":1,"total_steps":65}"#, "body.content.total_steps"),
        (#"{"template":"steps","current_step":4,"total_steps":3}"#, "body.content.current_step"),
        (#"{"template":"steps","total_steps":3}"#, "body.content.current_step"),
        (#"{"template":"steps","current_step":1,"total_steps":3,"step_rows":[1,1]}"#, "body.content.step_rows"),
        (#"{"template":"steps","current_step":1,"total_steps":2,"step_rows":[1,11]}"#, "body.content.step_rows[1]"),
        (#"{"template":"steps","current_step":1,"total_steps":1,"step_labels":["\#(String(repeating: "l", count: 33))"]}"#, "body.content.step_labels[0]"),
        (#"{"template":"steps","current_step":1,"total_steps":2,"step_weights":[1,0]}"#, "body.content.step_weights[1]"),
        (#"{"template":"alert","state":"CPU"}"#, "body.content.severity"),
        (#"{"template":"alert","severity":"fatal"}"#, "body.content.severity"),
        (#"{"template":"alert","severity":"info","severity_label":"\#(String(repeating: "s", count: 33))"}"#, "body.content.severity_label"),
        (#"{"template":"alert","severity":"info","image_url":"https://a.example/x.jpg"}"#, "body.content.image_url"),
        (#"{"template":"gauge","value":1,"min_value":0}"#, "body.content.max_value"),
        (#"{"template":"gauge","value":1,"min_value":5,"max_value":5}"#, "body.content.max_value"),
        (#"{"template":"gauge","value":300,"min_value":0,"max_value":250}"#, "body.content.value"),
        (#"{"template":"gauge","value":1,"min_value":0,"max_value":2,"unit":"\#(String(repeating: "u", count: 33))"}"#, "body.content.unit"),
        (#"{"template":"timeline","state":"x"}"#, "body.content.value"),
        (#"{"template":"timeline","value":42}"#, "body.content.value"),
        (#"{"template":"timeline","value":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11}}"#, "body.content.value"),
        (#"{"template":"timeline","value":{"\#(String(repeating: "k", count: 33))":1}}"#, "body.content.value"),
        (#"{"template":"timeline","value":{"cpu":"high"}}"#, "body.content.value.cpu"),
        (#"{"template":"timeline","value":{"cpu":1},"units":{"gpu":"degC"}}"#, "body.content.units.gpu"),
        (#"{"template":"timeline","value":{"cpu":1},"scale":"cubic"}"#, "body.content.scale"),
        (#"{"template":"timeline","value":{"cpu":1},"decimals":11}"#, "body.content.decimals"),
        (
            #"{"template":"timeline","value":{"cpu":1},"thresholds":[{"value":1},{"value":2},{"value":3},{"value":4},{"value":5},{"value":6}]}"#,
            "body.content.thresholds"
        ),
        (#"{"template":"timeline","value":{"cpu":1},"thresholds":[{"value":80,"label":"Critical level"}]}"#, "body.content.thresholds[0].label"),
        (#"{"template":"timeline","value":{"cpu":1},"thresholds":[{"color":"red"}]}"#, "body.content.thresholds[0].value"),
        (#"{"template":"board","state":"x"}"#, "body.content.tiles"),
        (#"{"template":"board","tiles":[]}"#, "body.content.tiles"),
        (
            #"{"template":"board","tiles":[{"label":"a","value":"1"},{"label":"b","value":"2"},{"label":"c","value":"3"},{"label":"d","value":"4"},{"label":"e","value":"5"}]}"#,
            "body.content.tiles"
        ),
        (#"{"template":"board","tiles":[{"label":"CPU","value":"12345678901234567"}]}"#, "body.content.tiles[0].value"),
        (#"{"template":"board","tiles":[{"label":"CPU","value":"1","unit":"megabytes"}]}"#, "body.content.tiles[0].unit"),
        (#"{"template":"board","tiles":[{"label":"CPU","value":"1","trend":"sideways"}]}"#, "body.content.tiles[0].trend"),
        (#"{"template":"board","tiles":[{"value":"1"}]}"#, "body.content.tiles[0].label"),
        (#"{"template":"log","state":"x"}"#, "body.content.lines"),
        (#"{"template":"log","lines":[\#(Array(repeating: #"{"text":"l"}"#, count: 21).joined(separator: ","))]}"#, "body.content.lines"),
        (#"{"template":"log","lines":[{"text":""}]}"#, "body.content.lines[0].text"),
        (#"{"template":"log","lines":[{"text":"\#(String(repeating: "t", count: 513))"}]}"#, "body.content.lines[0].text"),
        (#"{"template":"log","lines":[{"text":"x","level":"debug"}]}"#, "body.content.lines[0].level"),
        (
            #"{"template":"media","controls":{"play_pause":{"url":"https://ha.example/toggle","foreground":true}}}"#,
            "body.content.controls.play_pause.foreground"
        ),
        (#"{"template":"media","controls":{"rewind":{"url":"https://ha.example/rewind"}}}"#, "body.content.controls.rewind"),
        (#"{"template":"media","controls":{"extra":[{"url":"https://ha.example/shuffle"}]}}"#, "body.content.controls.extra[0].icon"),
        (
            #"{"template":"media","controls":{"extra":[{"url":"a://1","icon":"a"},{"url":"a://2","icon":"b"},{"url":"a://3","icon":"c"},{"url":"a://4","icon":"d"}]}}"#,
            "body.content.controls.extra"
        ),
        (#"{"template":"media","playback_state":"rewinding"}"#, "body.content.playback_state"),
        (#"{"template":"media","volume":1.5}"#, "body.content.volume"),
        (#"{"template":"media","duration_seconds":0}"#, "body.content.duration_seconds"),
        (#"{"template":"media","duration_seconds":604801}"#, "body.content.duration_seconds"),
        (#"{"template":"media","position_seconds":10,"position_at":1750000400}"#, "body.content.position_at"),
        (#"{"template":"generic","media_title":"Snooze"}"#, "body.content.media_title"),
        (#"{"template":"generic","controls":{"play_pause":{"url":"https://ha.example/toggle"}}}"#, "body.content.controls"),
        (#"{"template":"chart","progress":0.5}"#, "body.content.template"),
        (#"{"progress":0.5}"#, "body.content.template"),
    ]

    @Test(arguments: refused.indices)
    func refusedWith422(index: Int) {
        let (content, location) = Self.refused[index]
        #expect {
            _ = try patched(freshActivity(), #"{"state":"ongoing","content":\#(content)}"#)
        } throws: { error in
            guard let problem = error as? ActivityProblem else { return false }
            return problem.status == 422 && problem.code == .activityContentInvalid && problem.fieldErrors.first?.location == location
        }
    }

    @Test func theDetailOfAProgressOutOfRangeIsPushWards() throws {
        let error = #expect(throws: ActivityProblem.self) {
            _ = try patched(freshActivity(), #"{"content":{"template":"generic","progress":1.5}}"#)
        }
        #expect(error?.detail == "progress must be between 0.0 and 1.0, got 1.500000")
        #expect(error?.title == "Unprocessable Entity")
    }

    @Test func aRefusedPatchLeavesNothingBehind() throws {
        let started = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"generic","progress":0.2}}"#).activity)
        #expect(throws: ActivityProblem.self) { _ = try patched(started, #"{"content":{"progress":2}}"#) }
        #expect(started.content["progress"] == .double(0.2))
    }
}
