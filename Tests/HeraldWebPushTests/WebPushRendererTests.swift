import Foundation
import HeraldCore
import HeraldWebPush
import Testing

@Suite("Web Push renderer")
struct WebPushRendererTests {
    @Test func theServiceWorkerGetsTitleBodyImageTapTargetTagActionsAndTheDialectsData() {
        let content = NotificationContent(
            title: "Door", body: "Opened", level: .timeSensitive, imageURL: "https://example.com/a.jpg", hasMedia: true,
            actions: [["id": "open", "title": "Open", "url": "https://example.com/door"]], tapURL: "https://example.com/door",
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

    @Test func aLongBodyIsShortenedToFitOneRecordWithRoomForTheID() throws {
        let content = NotificationContent(title: "T", body: String(repeating: "🐦", count: 2_000))
        let fitted = try WebPushRenderer().fitted(content, priority: 10, collapseID: nil)
        #expect(fitted.truncated)
        #expect(fitted.data.count <= WebPushEncryption.maximumPlaintextSize - 64)
        #expect(fitted.renderedBy == "webpush")
    }
}
