import Foundation
import HeraldAPNs
import HeraldCore
import HeraldFCM
import Testing

@testable import HeraldServer

/// The renderers alone: provider-neutral content in, each provider's payload out (docs/payloads.md).
@Suite("Payload renderers")
struct PayloadRendererTests {
    static let full = NotificationContent(
        title: "Door", subtitle: "Front", body: "Opened", sound: .critical, level: .timeSensitive, thread: "doors",
        imageURL: "https://example.com/a.jpg", hasMedia: true, actions: [NotificationAction(id: "ok", title: "OK")],
        tapURL: "https://example.com/door", data: ["source": "doors", "count": 2])

    @Test func apnsPutsTheContentInAPSAndTheDialectsKeysAtTheTop() throws {
        let rendered = APNsRenderer().render(Self.full, priority: 10, collapseID: "door")
        #expect(
            rendered.payload == [
                "aps": [
                    "alert": ["title": "Door", "subtitle": "Front", "body": "Opened"], "interruption-level": "time-sensitive",
                    "sound": ["critical": 1, "name": "default", "volume": 1.0], "thread-id": "doors",
                    "category": .string(APNsRenderer.actionsCategory), "mutable-content": 1,
                ],
                "actions": [["id": "ok", "title": "OK"]], "source": "doors", "count": 2,
            ])
        #expect(rendered.bodyPath == ["aps", "alert", "body"])
        #expect(rendered.priority == 10)
    }

    @Test func apnsLeavesOutWhatTheContentDoesNotSay() {
        let rendered = APNsRenderer().render(NotificationContent(body: "Hi", sound: nil), priority: 5, collapseID: nil)
        #expect(rendered.payload == ["aps": ["alert": ["body": "Hi"]]])
        #expect(rendered.priority == 5)
    }

    @Test func fcmWithoutButtonsIsANotificationMessageAnditsDataIsStrings() {
        var content = Self.full
        content.actions = []
        let rendered = FCMRenderer().render(content, priority: 10, collapseID: "door")
        #expect(
            rendered.payload == [
                "notification": ["title": "Door", "body": "Opened", "image": "https://example.com/a.jpg"],
                "data": ["source": "doors", "count": "2", "level": "time-sensitive"],
                "android": [
                    "priority": "HIGH", "collapse_key": "door",
                    "notification": [
                        "notification_priority": "PRIORITY_HIGH", "sound": "default", "channel_id": "doors", "tag": "door",
                    ],
                ],
            ])
        #expect(rendered.bodyPath == FCMRenderer.notificationBodyPath)
    }

    @Test func fcmWithButtonsIsDataOnlyBecauseOnlyTheAppDrawsButtons() throws {
        let rendered = FCMRenderer().render(Self.full, priority: 10, collapseID: nil)
        #expect(rendered.payload["notification"] == nil)
        let data = try #require(rendered.payload["data"]?.objectValue)
        #expect(data["title"] == "Door")
        #expect(data["body"] == "Opened")
        #expect(data["actions"] == #"[{"id":"ok","title":"OK"}]"#)
        #expect(rendered.bodyPath == ["data", "body"])
    }

    @Test func aPassiveNotificationGoesAtNormalPriorityOnFCMOnly() {
        let passive = NotificationContent(title: "T", body: "B", level: .passive)
        let fcm = FCMRenderer().render(passive, priority: 10, collapseID: nil)
        #expect(fcm.priority == 5)
        #expect(fcm.payload["android"]?.objectValue?["priority"] == "NORMAL")
        #expect(APNsRenderer().render(passive, priority: 10, collapseID: nil).priority == 10)
    }

    @Test func aRawPartIsSentAsItIsToItsProviderAndTheNeutralFieldsToEveryOther() {
        let raw: JSONObject = ["aps": ["alert": ["title": "Relay", "body": "row for row"], "badge": 3], "webhook_id": "w"]
        let content = NotificationContent(
            title: "Relay", body: "row for row", providerPayloads: ["apns": .init(payload: raw, bodyPath: ["aps", "alert", "body"])])
        #expect(APNsRenderer().render(content, priority: 10, collapseID: nil).payload == raw)
        let fcm = FCMRenderer().render(content, priority: 10, collapseID: nil).payload
        #expect(fcm["notification"] == ["title": "Relay", "body": "row for row"])
    }

    @Test func theStoredFormReadsBackWhatWasWritten() throws {
        var content = Self.full
        content.providerPayloads = ["fcm": .init(payload: ["data": ["message": "m"]], bodyPath: ["data", "message"])]
        for sound: NotificationContent.Sound? in [.default, .critical, .named("chime.caf"), nil] {
            content.sound = sound
            let stored = try content.encoded()
            #expect(NotificationContent(stored: stored) == content)
        }
        #expect(NotificationContent(stored: Data("[1]".utf8)) == nil)
    }

    @Test func fittingShortensTheBodyWhereTheRendererSaysItSits() throws {
        let content = NotificationContent(title: "T", body: String(repeating: "é", count: 5_000))
        let apns = try APNsRenderer().fitted(content, priority: 10, collapseID: nil)
        #expect(apns.truncated)
        #expect(apns.data.count <= APNsRenderer.limit)
        #expect(apns.renderedBy == "apns")
        let fcm = try FCMRenderer().fitted(content, priority: 10, collapseID: nil)
        #expect(fcm.data.count <= FCMRenderer.limit)
        #expect(fcm.renderedBy == "fcm")
    }

    /// What adding a provider takes on the rendering side: a renderer, and its entry in the composition root's
    /// list. The dialects stay as they are: the camera API's draft renders through it unchanged.
    @Test func aThirdProvidersRendererTakesEveryDialectsContentUnchanged() throws {
        struct PlainTextRenderer: PayloadRenderer {
            let name = "plain"
            let sizeLimit = 64
            func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
                RenderedPayload(
                    payload: ["text": .string([content.title, content.body].compactMap(\.self).joined(separator: ": "))],
                    bodyPath: ["text"], priority: priority)
            }
        }
        let renderers = PayloadRenderers([.websocket: PlainTextRenderer()], fallback: APNsRenderer())
        let draft = try NotifyRequest(["user_id": .string(String(repeating: "a", count: 64)), "title": "Motion", "body": "Garden"]).draft
        let fitted = try renderers.renderer(for: .websocket).fitted(draft.content, priority: draft.priority, collapseID: draft.collapseID)
        #expect(String(decoding: fitted.data, as: UTF8.self) == #"{"text":"Motion: Garden"}"#)
        #expect(renderers.renderer(for: .apns).name == "apns")
    }
}
