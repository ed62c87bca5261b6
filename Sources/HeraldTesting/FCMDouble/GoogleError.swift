import Foundation
import HeraldCore

/// An error answer of a Google API in its JSON shape (`google.rpc.Status`):
/// `{"error":{"code":…,"message":…,"status":…,"details":[…]}}` with `content-type: application/json; charset=UTF-8`.
///
/// The wordings are Google's where the reference (`apns-fcm.md` §3) or captured answers give them; each builder says
/// where its text comes from.
struct GoogleError: Sendable {
    var code: Int
    var status: String
    var message: String
    var details: [JSONValue] = []
    /// Fields added to the answer (`retry-after`, `www-authenticate`).
    var headers: [(String, String)] = []

    /// The `errorCode` of the FcmError detail, if any.
    var fcmErrorCode: String? {
        details.lazy.compactMap { $0.objectValue }
            .first { $0["@type"] == .string(Self.fcmErrorType) }?["errorCode"]?.stringValue
    }

    var summary: FCMDouble.AnsweredError {
        FCMDouble.AnsweredError(code: code, status: status, message: message, errorCode: fcmErrorCode)
    }

    var response: DoubleResponse {
        var error: JSONObject = ["code": .int(code), "message": .string(message), "status": .string(status)]
        if !details.isEmpty { error["details"] = .array(details) }
        let body: JSONObject = ["error": .object(error)]
        return DoubleResponse(
            headers: [(":status", String(code)), ("content-type", "application/json; charset=UTF-8")] + headers,
            body: (try? JSONValue.object(body).encoded()) ?? Data())
    }

    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"

    // MARK: Details

    /// `{"@type": "…FcmError", "errorCode": code}`.
    static func fcmError(_ code: FCMErrorCode) -> JSONValue {
        ["@type": .string(fcmErrorType), "errorCode": .string(code.rawValue)]
    }

    /// `google.rpc.BadRequest` with one field violation (`field` left out when `nil`, as Google does for the
    /// request's root).
    static func badRequest(field: String?, description: String) -> JSONValue {
        var violation: JSONObject = ["description": .string(description)]
        if let field { violation["field"] = .string(field) }
        return ["@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [.object(violation)]]
    }

    /// `google.rpc.ErrorInfo` as the front end adds it to authentication errors (PyFCM#334 shows `ACCESS_TOKEN_EXPIRED`).
    static func errorInfo(reason: String) -> JSONValue {
        [
            "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": .string(reason), "domain": "googleapis.com",
            "metadata": ["service": "fcm.googleapis.com", "method": "google.firebase.fcm.v1.FcmService.SendMessage"],
        ]
    }

    // MARK: Errors

    /// An FcmError code with its canonical HTTP status, status string and Google's message (reference §3 table).
    static func fcm(_ code: FCMErrorCode, retryAfter: Int? = nil, projectID: String) -> GoogleError {
        let (status, canonical, message): (Int, String, String) =
            switch code {
            case .unspecifiedError: (500, "UNKNOWN", "Unknown error.")
            case .invalidArgument: (400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
            case .unregistered: (404, "NOT_FOUND", "Requested entity was not found.")
            case .senderIDMismatch: (403, "PERMISSION_DENIED", "SenderId mismatch")
            case .quotaExceeded:
                (
                    429, "RESOURCE_EXHAUSTED",
                    "Quota exceeded for quota metric 'Send messages' and limit 'Send messages per minute' of service "
                        + "'fcm.googleapis.com' for consumer 'project_number:\(projectNumber(projectID))'."
                )
            case .unavailable: (503, "UNAVAILABLE", "The service is currently unavailable.")
            case .internal: (500, "INTERNAL", "Internal error encountered.")
            case .thirdPartyAuthError: (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service")
            }
        return GoogleError(
            code: status, status: canonical, message: message, details: [fcmError(code)],
            headers: retryAfter.map { [("retry-after", String($0))] } ?? [])
    }

    /// FCM's own refusal of a message it could parse: 400 INVALID_ARGUMENT with the FcmError detail and, when the
    /// fault is one field's, a BadRequest naming it (the shape of "Recipient of the message is not set." and of the
    /// invalid-token answer in FCM's error-code page).
    static func invalidMessage(_ message: String, field: String?) -> GoogleError {
        var details = [fcmError(.invalidArgument)]
        if let field { details.append(badRequest(field: field, description: message)) }
        return GoogleError(code: 400, status: "INVALID_ARGUMENT", message: message, details: details)
    }

    /// A body the front end could not turn into the request message (JSON syntax, unknown names, wrong types):
    /// 400 INVALID_ARGUMENT with only a BadRequest detail, as in FCM's example for `message.data[0].value`.
    static func unparsable(_ message: String, field: String?) -> GoogleError {
        GoogleError(
            code: 400, status: "INVALID_ARGUMENT", message: message,
            details: [badRequest(field: field, description: message)])
    }

    /// `Invalid value at '<field>' (<type>), <value>`: the front end's words for a value of the wrong type.
    static func invalidValue(at field: String, type: String, value: JSONValue) -> GoogleError {
        let text: String =
            switch value {
            case .object: "Starting an object on a scalar field"
            case .array: "Proto field is not repeating, cannot start list."
            default: String(decoding: (try? value.encoded()) ?? Data(), as: UTF8.self)
            }
        return unparsable("Invalid value at '\(field)' (\(type)), \(text)", field: field)
    }

    /// 401 for a request without credentials (Edujugon/PushNotification#80).
    static let credentialsMissing = GoogleError(
        code: 401, status: "UNAUTHENTICATED",
        message: "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie "
            + "or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        details: [errorInfo(reason: "CREDENTIALS_MISSING")],
        headers: [("www-authenticate", #"Bearer realm="https://accounts.google.com/""#)])

    /// 401 for an unknown, revoked or (with `reason` `ACCESS_TOKEN_EXPIRED`) expired access token (PyFCM#334).
    static func invalidCredentials(reason: String?) -> GoogleError {
        GoogleError(
            code: 401, status: "UNAUTHENTICATED",
            message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                + "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
            details: reason.map { [errorInfo(reason: $0)] } ?? [],
            headers: [("www-authenticate", #"Bearer realm="https://accounts.google.com/", error="invalid_token""#)])
    }

    /// 403 for a token granted without an FCM scope.
    static let insufficientScopes = GoogleError(
        code: 403, status: "PERMISSION_DENIED", message: "Request had insufficient authentication scopes.",
        details: [errorInfo(reason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT")],
        headers: [
            (
                "www-authenticate",
                #"Bearer realm="https://accounts.google.com/", error="insufficient_scope", "#
                    + #"scope="\#(FCMDouble.messagingScope) \#(FCMDouble.cloudPlatformScope)""#
            )
        ])

    /// 403 for a project the account may not send for (xtrinch/fcm-django#213 quotes the message).
    static func permissionDenied(project: String) -> GoogleError {
        GoogleError(
            code: 403, status: "PERMISSION_DENIED",
            message: "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
    }

    /// A stable 12-digit "project number" for a project id (Google numbers projects; quota messages name it).
    static func projectNumber(_ projectID: String) -> String {
        let sum = projectID.utf8.reduce(UInt64(1_469_598_103_934_665_603)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        return String(100_000_000_000 + sum % 900_000_000_000)
    }
}
