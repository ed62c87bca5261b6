import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// One row of the `data` → APNs table in docs/homeassistant.md.
struct MappingRow: Sendable, CustomTestStringConvertible {
    var name: String
    var message = "Hello World"
    var title: String? = "Front door"
    var data: String?
    /// The exact APNs body (keys sorted, `webhook_id` always added from `registration_info`).
    var payload: String
    var pushType = "alert"
    var priority = "10"
    var collapseID: String?

    var testDescription: String { name }
}

let webhook = #""webhook_id":"webhook_id_from_registration""#

let mappingRows: [MappingRow] = [
    MappingRow(name: "message and title", payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"default"},\#(webhook)}"#),
    MappingRow(name: "no title", title: nil, payload: #"{"aps":{"alert":{"body":"Hello World"},"mutable-content":1,"sound":"default"},\#(webhook)}"#),
    MappingRow(name: "subtitle", data: #"{"subtitle": "Porch"}"#, payload: #"{"aps":{"alert":{"body":"Hello World","subtitle":"Porch","title":"Front door"},"mutable-content":1,"sound":"default"},\#(webhook)}"#),
    MappingRow(name: "push merged into aps", data: #"{"push": {"badge": "5", "category": "camera", "interruption-level": "time-sensitive", "relevance-score": 0.5}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"badge":5,"category":"CAMERA","interruption-level":"time-sensitive","mutable-content":1,"relevance-score":0.5,"sound":"default"},\#(webhook)}"#),
    MappingRow(name: "sound none", data: #"{"sound": "none"}"#, payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1},\#(webhook)}"#),
    MappingRow(name: "named sound in push", data: #"{"push": {"sound": "US-EN-Alexa-Motion-Detected-Generic.wav"}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"US-EN-Alexa-Motion-Detected-Generic.wav"},\#(webhook)}"#),
    MappingRow(name: "critical sound", data: #"{"push": {"sound": {"name": "default", "critical": "1", "volume": "0.8"}}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":{"critical":1,"name":"default","volume":0.8}},\#(webhook)}"#),
    MappingRow(name: "group", data: #"{"group": "doors"}"#, payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"default","thread-id":"doors"},\#(webhook)}"#),
    MappingRow(name: "tag", data: #"{"tag": "door-1"}"#, payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"default"},\#(webhook)}"#, collapseID: "door-1"),
    MappingRow(name: "actions", data: #"{"actions": [{"action": "OPEN", "title": "Open"}]}"#,
               payload: #"{"actions":[{"action":"OPEN","title":"Open"}],"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},\#(webhook)}"#),
    MappingRow(name: "entity_id", data: #"{"entity_id": "camera.porch"}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"entity_id":"camera.porch",\#(webhook)}"#),
    MappingRow(name: "attachment", data: #"{"attachment": {"url": "https://example.com/a.png", "content-type": "png", "hide-thumbnail": true}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"attachment":{"content-type":"png","hide-thumbnail":true,"url":"https://example.com/a.png"},\#(webhook)}"#),
    MappingRow(name: "image", data: #"{"image": "/api/camera_proxy/camera.porch"}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"attachment":{"content-type":"jpeg","url":"/api/camera_proxy/camera.porch"},\#(webhook)}"#),
    MappingRow(name: "video", data: #"{"video": "https://example.com/clip.mp4"}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"attachment":{"content-type":"mpeg4","url":"https://example.com/clip.mp4"},\#(webhook)}"#),
    MappingRow(name: "audio", data: #"{"audio": "https://example.com/bell.wav"}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"attachment":{"content-type":"waveformaudio","url":"https://example.com/bell.wav"},\#(webhook)}"#),
    MappingRow(name: "url, shortcut, presentation_options, action_data",
               data: #"{"url": "/lovelace/cameras", "shortcut": {"name": "Open Door"}, "presentation_options": ["alert", "badge"], "action_data": {"entity_id": "lock.front"}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DYNAMIC","mutable-content":1,"sound":"default"},"homeassistant":{"entity_id":"lock.front"},"presentation_options":["alert","badge"],"shortcut":{"name":"Open Door"},"url":"/lovelace/cameras",\#(webhook)}"#),
    MappingRow(name: "apns_headers", data: #"{"apns_headers": {"apns-priority": "5", "apns-collapse-id": "sensor"}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"default"},\#(webhook)}"#, priority: "5", collapseID: "sensor"),
    MappingRow(name: "command request_location_update", message: "request_location_update", title: nil,
               payload: #"{"aps":{"content-available":1},"homeassistant":{"command":"request_location_update"},\#(webhook)}"#, pushType: "background", priority: "5"),
    MappingRow(name: "command clear_notification", message: "clear_notification", title: nil, data: #"{"tag": "door-1"}"#,
               payload: #"{"aps":{"content-available":1},"homeassistant":{"command":"clear_notification","tag":"door-1"},\#(webhook)}"#, pushType: "background", priority: "5"),
    MappingRow(name: "command clear_badge", message: "clear_badge", title: nil,
               payload: #"{"aps":{"badge":0},\#(webhook)}"#),
    MappingRow(name: "command clear_notification with a collapse id", message: "clear_notification", title: nil,
               data: #"{"tag": "door-1", "apns_headers": {"apns-collapse-id": "door-1-id"}}"#,
               payload: #"{"aps":{"content-available":1},"homeassistant":{"collapseId":"door-1-id","command":"clear_notification","tag":"door-1"},\#(webhook)}"#,
               pushType: "background", priority: "5"),
    MappingRow(name: "kiosk and icon fields", data: #"{"level": 0.4, "mode": "clock", "volume": null, "notification_icon": "mdi:door", "color": "red"}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"mutable-content":1,"sound":"default"},"color":"red","level":0.4,"mode":"clock","notification_icon":"mdi:door","volume":null,\#(webhook)}"#),
    MappingRow(name: "action_data keeps a given category", data: #"{"action_data": {"x": 1}, "push": {"category": "door"}}"#,
               payload: #"{"aps":{"alert":{"body":"Hello World","title":"Front door"},"category":"DOOR","mutable-content":1,"sound":"default"},"homeassistant":{"x":1},\#(webhook)}"#),
    MappingRow(name: "command update_widgets", message: "update_widgets", title: nil,
               payload: #"{"aps":{"content-available":1},"homeassistant":{"command":"update_widgets"},\#(webhook)}"#, pushType: "background", priority: "5"),
]

@Suite("Home Assistant data → APNs, at the APNs double")
struct HomeAssistantPayloadTests {
    @Test(arguments: mappingRows)
    func eachMappingRowReachesAPNsAsDocumented(_ row: MappingRow) async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let response = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, message: row.message, title: row.title, data: row.data))
            #expect(response.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(String(decoding: push.body, as: UTF8.self) == row.payload)
            #expect(push.header("apns-push-type") == row.pushType)
            #expect(push.header("apns-priority") == row.priority)
            #expect(push.header("apns-collapse-id") == row.collapseID)
            #expect(push.providerTokenIsValid)
        }
        try await apns.shutdown()
    }

    @Test func commandsAndCriticalAlertsDoNotCount() async throws {
        let apns = try await APNsTestServer.start(dailyLimit: 1)
        try await apns.server.run { client in
            let registration = try await client.register()
            for (message, data) in [("update_complications", nil), ("delete_alert", nil),
                                    ("Smoke!", #"{"push": {"sound": {"name": "default", "critical": 1, "volume": 1.0}}}"#)] {
                let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: message, data: data))
                #expect(response.status == .created)
                #expect(try response.json()["rateLimits"]?.objectValue?["successful"] == 0)
            }
            #expect(apns.production.acceptedPushes.count == 3)
        }
        try await apns.shutdown()
    }

    @Test func aDeadTokenIs500InvalidTokenForHomeAssistant() async throws {
        let apns = try await APNsTestServer.start()
        apns.production.markUnregistered(Fixtures.apnsToken(3))
        try await apns.server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(3))
            let response = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID))
            #expect(response.status == .internalServerError)
            let json = try response.json()
            #expect(json["errorType"] == "InvalidToken")
            #expect(json["message"]?.stringValue?.isEmpty == false)
        }
        try await apns.shutdown()
    }

    @Test func aMessageTooLongIsShortenedAndAPayloadThatCannotFitIs500PayloadTooLarge() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let long = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, message: String(repeating: "ü", count: 3_000)))
            #expect(long.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(push.body.count <= 4096)
            #expect(String(decoding: push.body, as: UTF8.self).contains("…"))

            let huge = String(repeating: "x", count: 5_000)
            let tooLarge = try await client.post("/api/push/homeassistant", homeAssistantBody(registration.userID, data: #"{"url": "\#(huge)"}"#))
            #expect(tooLarge.status == .internalServerError)
            #expect(try tooLarge.json()["errorType"] == "PayloadTooLarge")
        }
        try await apns.shutdown()
    }
}
