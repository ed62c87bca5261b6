import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// Every example body docs-full.txt gives for the nine templates is accepted, and stored as sent (plus what the
/// server computes).
@Suite("Template examples the document accepts")
struct TemplateExampleTests {
    static let examples: [(template: String, body: String)] = [
        (
            "generic",
            #"{"state":"ongoing","content":{"template":"generic","progress":0.65,"state":"Washing","icon":"washer","remaining_time":1800,"subtitle":"Cycle 2 of 3","accent_color":"blue"}}"#
        ),
        (
            "generic",
            #"{"state":"ongoing","content":{"template":"generic","progress":0.4,"state":"Downloading","icon":"arrow.down.circle","subtitle":"ubuntu-24.04.iso","end_date":1750003600,"live_progress":true,"accent_color":"cyan"}}"#
        ),
        (
            "generic",
            #"{"state":"ongoing","content":{"template":"generic","progress":0.35,"state":"Playing","subtitle":"S02E04 - The Constant","icon":"play.fill","image_url":"https://images.example.com/lost/s02e04.jpg","image_shape":"poster","image_thumbhash":"GYpSpSh4eHt4eHh4eHh4eHh4iIeH","accent_color":"indigo"}}"#
        ),
        (
            "countdown",
            #"{"state":"ongoing","content":{"template":"countdown","progress":0.0,"state":"Baking","icon":"flame","subtitle":"25 min timer","duration":"25m","warning_threshold":60,"completion_message":"Done baking!","accent_color":"orange","alarm":true}}"#
        ),
        (
            "steps",
            #"{"state":"ongoing","content":{"template":"steps","progress":0.375,"state":"Build Container Image","icon":"arrow.triangle.branch","subtitle":"pushward-server / CI/CD","current_step":2,"total_steps":8,"step_rows":[1,1,3,1,1,2,1,1],"step_labels":["Lint","Build","Test","Scan","Publish","Deploy","Verify","Notify"],"accent_color":"green"}}"#
        ),
        (
            "steps",
            #"{"state":"ongoing","content":{"template":"steps","state":"Drying","icon":"dishwasher","subtitle":"Eco cycle","current_step":3,"total_steps":3,"progress":0.5,"step_labels":["Wash","Rinse","Dry"],"step_weights":[1,2,1],"step_colors":["blue","teal","orange"],"accent_color":"teal"}}"#
        ),
        (
            "steps",
            #"{"state":"ongoing","content":{"template":"steps","state":"Test","icon":"arrow.triangle.branch","subtitle":"my-app / CI/CD","current_step":3,"total_steps":6,"progress":0.5,"step_labels":["Lint","Build","Test","Scan","Publish","Deploy"],"step_rows":[1,1,3,1,1,1],"step_weights":[15,180,90,45,20,60],"step_colors":["purple","blue","yellow","orange","green","green"],"accent_color":"green"}}"#
        ),
        (
            "steps",
            #"{"state":"ongoing","content":{"template":"steps","state":"Heating water","icon":"dishwasher","subtitle":"Eco 50","current_step":2,"total_steps":4,"step_labels":["Pre-wash","Wash","Rinse","Dry"],"step_weights":[1,6,1,2],"live_progress":true,"duration":"90m","accent_color":"teal"}}"#
        ),
        (
            "steps",
            #"{"state":"ongoing","content":{"template":"steps","state":"Importing","subtitle":"Radarr","current_step":3,"total_steps":4,"step_labels":["Grab","Download","Import","Rename"],"progress":0.6,"image_url":"https://image.example.com/posters/arrival.jpg","image_shape":"poster","image_thumbhash":"GYpSpSh4eHt4eHh4eHh4eHh4iIeH","accent_color":"purple"}}"#
        ),
        (
            "alert",
            #"{"state":"ongoing","content":{"template":"alert","progress":0.0,"state":"CPU usage is 94.2%","icon":"exclamationmark.triangle.fill","subtitle":"Grafana · nas-01","severity":"critical","severity_label":"SEV1","fired_at":1750009000,"accent_color":"red","url":"https://grafana.example.com/alerting/1afz29v7z/edit","secondary_url":"https://grafana.example.com/d/abc123?viewPanel=1"}}"#
        ),
        (
            "alert",
            #"{"state":"ongoing","content":{"template":"alert","progress":0.0,"state":"CPU usage is 94.2%","icon":"exclamationmark.triangle.fill","subtitle":"Grafana · nas-01","severity":"warning","fired_at":1750009000,"accent_color":"red","tap_action":{"url":"grafana://alerts/1afz29v7z"},"url_action":{"url":"https://hooks.example.com/grafana/ack","method":"POST","headers":{"Authorization":"Bearer hooks_xxx"},"body":"{\"alert\":\"1afz29v7z\",\"acked\":true}","title":"Acknowledge","icon":"checkmark.circle"},"secondary_url_action":{"url":"https://grafana.example.com/d/abc123?viewPanel=1","foreground":true,"title":"Open panel","icon":"chart.bar"}}}"#
        ),
        (
            "gauge",
            #"{"state":"ongoing","content":{"template":"gauge","value":125,"min_value":0,"max_value":250,"unit":"degC","state":"Heating","icon":"thermometer.medium","accent_color":"orange"}}"#
        ),
        (
            "timeline",
            #"{"state":"ongoing","content":{"template":"timeline","value":{"Temperature":13.7},"unit":"degC","state":"Heating","icon":"thermometer.medium","accent_color":"orange","smoothing":true}}"#
        ),
        (
            "timeline",
            #"{"state":"ongoing","content":{"template":"timeline","value":{"CPU":72.5,"GPU":45.2,"Fan":60.0,"SSD":38.1},"unit":"%","units":{"GPU":"degC","SSD":"degC"},"state":"Monitoring","primary_series":"CPU","thresholds":[{"value":80,"color":"red","label":"Critical"},{"value":60,"color":"orange"}]}}"#
        ),
        (
            "board",
            #"{"state":"ongoing","content":{"template":"board","state":"All systems nominal","icon":"server.rack","accent_color":"green","tiles":[{"label":"Uptime","value":"99.98","unit":"%","icon":"checkmark.circle","color":"green","trend":"flat"},{"label":"CPU","value":"47","unit":"%","icon":"cpu","color":"cyan","trend":"up"},{"label":"Memory","value":"6.2","unit":"GB","color":"blue"},{"label":"Errors","value":"3","unit":"/h","icon":"exclamationmark.triangle","color":"orange","trend":"down","url_action":{"url":"https://grafana.example.com/errors","foreground":true}}]}}"#
        ),
        (
            "log",
            #"{"state":"ongoing","content":{"template":"log","state":"pushward-server","icon":"doc.text","accent_color":"purple","lines":[{"text":"Rollout complete - 3/3 pods healthy","at":1718990000,"level":"info"},{"text":"Image pull slow on node arm-2","at":1718989950,"level":"warn"},{"text":"Applied manifest revision d86246c","at":1718989930,"level":"info"},{"text":"Sync started by webhook","at":1718989900,"level":"info"}]}}"#
        ),
        ("media", mediaStart),
    ]

    static let mediaStart = #"""
        {"state":"ongoing","content":{"template":"media","media_title":"Snooze","subtitle":"SZA","playback_state":"playing","position_seconds":47.5,
        "duration_seconds":214,"volume":0.35,"favorite":true,"image_url":"https://cdn.example.com/art/snooze.jpg","image_shape":"square",
        "image_thumbhash":"m8QNJRZ3d3B4aIh4iIiHd4iPjvcX","controls":{"previous":{"url":"https://ha.example/api/webhook/pw-prev"},
        "play_pause":{"url":"https://ha.example/api/webhook/pw-toggle"},"next":{"url":"https://ha.example/api/webhook/pw-next"},
        "stop":{"url":"https://ha.example/api/webhook/pw-stop"},"favorite":{"url":"https://ha.example/api/webhook/pw-fav"},
        "volume_down":{"url":"https://ha.example/api/webhook/pw-vol-down"},"volume_up":{"url":"https://ha.example/api/webhook/pw-vol-up"},
        "extra":[{"url":"https://ha.example/api/webhook/pw-shuffle","icon":"shuffle","title":"Shuffle"}]}}}
        """#

    @Test(arguments: examples.indices)
    func theDocumentsExampleStartsTheActivity(index: Int) throws {
        let (template, body) = Self.examples[index]
        let outcome = try patched(freshActivity(), body)
        let activity = try #require(outcome.activity)
        #expect(activity.state == .ongoing)
        #expect(activity.content["template"] == .string(template))
        #expect(outcome.push?.event == .start)
        let sent = try #require(try JSONValue.decode(Data(bytes(body))).objectValue?["content"]?.objectValue)
        for (key, value) in sent where !["duration", "history"].contains(key) {
            if key == "controls" { continue }  // methods are filled in (mediaControlsGetPOSTAndPositionIsStamped)
            #expect(activity.content[key] == value, "\(key) is stored as sent")
        }
    }

    @Test func theResolvedAlertAndTheTargetReachedGaugeEndTheActivity() throws {
        let alert = try patched(freshActivity(), Self.examples[9].body).activity!
        let resolved = try patched(
            alert,
            #"{"state":"ended","content":{"template":"alert","progress":1.0,"state":"Resolved - CPU usage normalized","icon":"checkmark.circle.fill","subtitle":"Grafana · nas-01","severity":"critical","accent_color":"green","url":"https://grafana.example.com/alerting/1afz29v7z/edit"}}"#
        )
        #expect(resolved.activity?.state == .ended)
        #expect(resolved.push?.event == .end)
        let gauge = try patched(freshActivity(), Self.examples[11].body).activity!
        let reached = try patched(
            gauge,
            #"{"state":"ended","content":{"template":"gauge","value":250,"min_value":0,"max_value":250,"unit":"degC","state":"Ready","icon":"checkmark.circle.fill","accent_color":"green"}}"#
        )
        #expect(reached.activity?.content["progress"] == .double(1))
        #expect(reached.push?.event == .end)
    }

    @Test func theMediaFollowUpPatchesApplyInTurn() throws {
        var activity = try #require(try patched(freshActivity("living-room-player", name: "Living Room"), Self.mediaStart).activity)
        let followUps = [
            #"{ "content": { "playback_state": "paused", "position_seconds": 61.2 } }"#,
            #"{ "content": { "playback_state": "playing", "position_seconds": 61.2 } }"#,
            #"{ "content": { "media_title": "Kill Bill", "position_seconds": 0, "duration_seconds": 153, "favorite": false } }"#,
        ]
        for body in followUps {
            let outcome = try patched(activity, body)
            #expect(outcome.push?.event == .update)
            activity = try #require(outcome.activity)
        }
        #expect(activity.content["media_title"] == "Kill Bill")
        #expect(activity.content["playback_state"] == "playing")
        #expect(activity.content["controls"]?.objectValue?.count == 8, "the controls carry over")
        let ended = try patched(activity, #"{ "state": "ended" }"#)
        #expect(ended.push?.event == .end)
        let backdated = try patched(
            activity, #"{ "content": { "position_seconds": 61.2, "position_at": 1755500000 } }"#, at: Date(timeIntervalSince1970: 1_755_500_010))
        #expect(backdated.activity?.content["position_at"] == .int(1_755_500_000))
    }

    @Test func theUpsertAndTheAlarmExamplesOfTheAPIReference() throws {
        let patch = try ActivityRequest.patch(
            json: bytes(#"{"state":"ongoing","content":{"template":"generic","progress":0.1,"state":"Washing","icon":"washer","accent_color":"blue"}}"#))
        let upserted = try ActivityRules().apply(.patch(slug: "dishwasher", patch, upsert: true), to: nil, device: ActivityDeviceFacts(), now: testNow)
        #expect(upserted.action == .created)
        #expect(upserted.activity?.name == "dishwasher", "the name defaults to the slug")
        let sound = try patched(
            upserted.activity!,
            #"{"state":"ongoing","sound":"chime","content":{"template":"generic","progress":1.0,"state":"Done","icon":"washer","accent_color":"green"}}"#)
        #expect(sound.push?.apnsPriority == 10)
        #expect(sound.push?.sound == "chime")
        let oven = try patched(
            freshActivity("oven-timer"),
            #"{"state":"ongoing","content":{"template":"countdown","progress":0.0,"state":"Baking","icon":"flame","duration":"25m","completion_message":"Done baking!","accent_color":"orange","alarm":true}}"#
        )
        let cleared = try patched(oven.activity!, #"{"content": {"alarm": null}}"#)
        #expect(cleared.activity?.content["alarm"] == nil)
        #expect(cleared.activity?.content["end_date"] == .int(1_750_000_000 + 1_500), "the rest of content is untouched")
        let ended = try patched(oven.activity!, #"{"state": "ended", "dismissal_ttl": 0}"#)
        #expect(ended.push?.dismissalDate == testNow)
    }
}
