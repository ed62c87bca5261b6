import Foundation

/// The one notification that tells a device its quota for today is used up, as Home Assistant's relay sends it.
package enum QuotaAnnouncement {
    /// Its content: title and body for every provider, the figures in `rate_limit` (localisable keys, as the app
    /// receives them over APNs and the WebSocket channel); on FCM the relay's own Android message.
    package static func content(title: String, body: String, maximum: Int, resetsAt: Date) -> NotificationContent {
        let resetsAtText = resetsAt.iso8601WithMilliseconds
        // As Home Assistant's relay words it for Android: localisable keys, the figures in `data`.
        let android: JSONObject = [
            "notification": ["title": .string(title), "body": .string(body)],
            "data": ["rateLimited": "true", "maxNotificationsPerDay": .string(String(maximum)), "resetsAt": .string(resetsAtText)],
            "android": [
                "collapse_key": "herald-rate-limit",
                "notification": [
                    "title_loc_key": "rate_limit_notification.title", "body_loc_key": "rate_limit_notification.body",
                    "body_loc_args": [.string(String(maximum))], "tag": "herald-rate-limit",
                ],
            ],
        ]
        return NotificationContent(
            title: title, body: body,
            data: [
                "rate_limit": [
                    "loc-key": "rate_limit_notification.body", "title-loc-key": "rate_limit_notification.title",
                    "maximum": .int(maximum), "resetsAt": .string(resetsAtText),
                ]
            ],
            providerPayloads: [Platform.fcm.rawValue: .init(payload: android, bodyPath: ["notification", "body"])])
    }
}
