import Foundation
import HeraldCore
import HeraldWebPush
import Testing

@Suite("Web Push renderer")
struct WebPushRendererTests {
    @Test func theServiceWorkerGetsTitleBodyImageTapTargetTagActionsAndTheDialectsData() {
        let content = NotificationContent(
            title: "Door", body: "Opened", level: .timeSensitive, imageURL: "https://example.com/a.jpg", hasMedia: true,
            actions: [NotificationAction(id: "open", title: "Open", url: "https://example.com/door")], tapURL: "https://example.com/door",
            data: ["source": "doors"])
        let rendered = WebPushRenderer().render(content, priority: 10, collapseID: "door")
        #expect(
            rendered.payload == [
                "title": "Door", "body": "Opened", "image": "https://example.com/a.jpg", "url": "https://example.com/door",
                "tag": "door", "level": "time-sensitive",
                "actions": [["id": "open", "title": "Open", "url": "https://example.com/door"]], "data": ["source": "doors"],
            ])
        #expect(rendered.bodyPath == ["body"])
    }

    @Test func aSilentNotificationSaysSoAndRawPartsForOtherProvidersAreNotSent() {
        let content = NotificationContent(
            title: "Relay", body: "row for row", sound: nil,
            providerPayloads: ["apns": .init(payload: ["aps": ["badge": 1]], bodyPath: nil)])
        #expect(
            WebPushRenderer().render(content, priority: 5, collapseID: nil).payload
                == ["title": "Relay", "body": "row for row", "silent": true])
    }

    /// Herald's web app performs a silent action from its service worker with the action's own method, headers and
    /// body (seed 001), and opens a foreground one: the renderer passes each action whole.
    @Test func actionsReachTheServiceWorkerWholeWithMethodHeadersBodyAndForeground() {
        let action: JSONObject = [
            "id": "open-blinds", "title": "Open", "url": "https://ha.local/api/services/cover/open_cover", "method": "POST",
            "headers": ["Authorization": "Bearer HA", "Content-Type": "application/json"], "body": #"{"entity_id":"cover.blinds"}"#,
            "foreground": false, "destructive": false, "authentication_required": false,
        ]
        let content = NotificationContent(
            title: "Blinds", body: "Open them?",
            actions: [
                NotificationAction(
                    id: "open-blinds", title: "Open", url: "https://ha.local/api/services/cover/open_cover", method: .post,
                    headers: ["Authorization": "Bearer HA", "Content-Type": "application/json"], body: #"{"entity_id":"cover.blinds"}"#,
                    foreground: false, destructive: false, authenticationRequired: false),
                NotificationAction(id: "view", title: "View", foreground: true),
            ])
        let payload = WebPushRenderer().render(content, priority: 10, collapseID: nil).payload
        #expect(payload["actions"] == .array([.object(action), ["id": "view", "title": "View", "foreground": true]]))
    }

    @Test func aLongBodyIsShortenedToFitOneRecordWithRoomForTheID() throws {
        let content = NotificationContent(title: "T", body: String(repeating: "🐦", count: 2_000))
        let fitted = try WebPushRenderer().fitted(content, priority: 10, collapseID: nil)
        #expect(fitted.truncated)
        #expect(fitted.data.count <= WebPushEncryption.maximumPlaintextSize - 64)
        #expect(fitted.renderedBy == "webpush")
    }
}
