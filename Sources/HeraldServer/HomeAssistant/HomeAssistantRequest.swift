import Foundation
import HTTPTypes
import HeraldCore

/// What Home Assistant's `mobile_app` notify platform POSTs to a `push_url`
/// (`_async_send_remote_message_target` in `notify.py`).
struct HomeAssistantRequest {
    var message: String
    var title: String?
    /// The device's USER_ID.
    var pushToken: String
    var webhookID: String?
    var data: JSONObject

    /// Decodes the body. A missing `push_token` is a 403 (as the official relay answers); other problems are 400s.
    init(_ json: JSONObject) throws {
        let fields = FieldReader(json)
        guard let token = try? fields.optionalString("push_token") else {
            throw APIError(.missingPushToken, field: "push_token")
        }
        guard UserIDRule.accepts(token) else {
            throw APIError(.invalidPushToken, field: "push_token")
        }
        pushToken = token
        message = try fields.requiredString("message")
        title = try fields.optionalString("title")
        // Home Assistant sends these as objects or not at all; `""` is not the `rest_command` rendering of "nothing" here.
        if let registration = try fields.optionalObject("registration_info", emptyStringIsAbsent: false) {
            webhookID = try registration.optionalString("webhook_id")
        }
        data = try fields.optionalObject("data", emptyStringIsAbsent: false)?.object ?? [:]
    }
}
