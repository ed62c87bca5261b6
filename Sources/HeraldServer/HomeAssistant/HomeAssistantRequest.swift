import Foundation
import HTTPTypes
import HeraldCore

/// What Home Assistant's `mobile_app` notify platform POSTs to a `push_url`
/// (`_async_send_remote_message_target` in `notify.py`, and its Live Activity path).
struct HomeAssistantRequest {
    var message: String
    var title: String?
    /// The device's USER_ID, as Home Assistant sent it (answers echo it as `target`).
    var pushToken: String
    /// The same, parsed once here.
    var userID: UserID
    /// `registration_info.app_id`; `nil` when Home Assistant did not send one (taken as the Home Assistant app).
    var appID: String?
    /// `registration_info.os_version`, e.g. `17.2` or `10.15` (macOS Catalina).
    var osVersion: String?
    var webhookID: String?
    /// A Live Activity's update token or the device's push-to-start token: the push goes there, not to the device.
    var liveActivityToken: String?
    var data: JSONObject

    /// Whether the request is for Home Assistant's own app (`io.robbie.HomeAssistant…`): only then does the relay map
    /// `data` and the commands; another app gets the plain alert.
    var isHomeAssistantApp: Bool { appID.map { $0.contains("io.robbie.HomeAssistant") } ?? true }

    /// Decodes the body. A missing `push_token` is a 403 (as the official relay answers); other problems are 400s.
    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        guard let token = try? fields.optionalString("push_token") else {
            throw APIError(.missingPushToken, field: "push_token")
        }
        guard let userID = UserID(token) else {
            throw APIError(.invalidPushToken, field: "push_token")
        }
        pushToken = token
        self.userID = userID
        message = try fields.requiredString("message")
        title = try fields.optionalString("title")
        // Home Assistant sends these as objects or not at all; `""` is not the `rest_command` rendering of "nothing" here.
        if let registration = try fields.optionalObject("registration_info", emptyStringIsAbsent: false) {
            webhookID = try registration.optionalString("webhook_id")
            appID = try registration.optionalString("app_id")
            osVersion = try registration.optionalString("os_version")
        }
        if let activityToken = try fields.optionalString("live_activity_token") {
            // It becomes the path of the APNs request: hex only, as every APNs token is.
            guard activityToken.utf8.count <= 400, activityToken.utf8.count.isMultiple(of: 2), Secrets.isHex(activityToken) else {
                throw APIError.invalidField(
                    "live_activity_token", "live_activity_token must be an APNs token: an even number of hexadecimal digits.")
            }
            liveActivityToken = activityToken.lowercased()
        }
        data = try fields.optionalObject("data", emptyStringIsAbsent: false)?.object ?? [:]
    }
}
