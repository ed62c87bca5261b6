import HTTPTypes

/// Every error code Herald answers with, in one place: the code as the JSON bodies carry it (the raw value), its
/// HTTP status, and the sentence it says when the refusal has nothing more specific to say. docs/api.md explains
/// them to clients; the WebSocket channel's error results (docs/websocket.md) use the same codes.
///
/// ```swift
/// throw APIError(.unknownUser)                      // 404 `unknown_user`, its default message
/// throw APIError(.tokenNameTaken, message: "This device already has a token named \"ha\".", field: "name")
/// ```
public enum ErrorCode: String, CaseIterable, Sendable {
    // MARK: Any request

    case malformedJSON = "malformed_json"
    case invalidField = "invalid_field"
    case bodyTooLarge = "body_too_large"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case upgradeRequired = "upgrade_required"
    case internalError = "internal_error"
    /// An error of Hummingbird's own whose status no other code stands for. Its text is `http_` and the status code
    /// (`http_400`, `http_415`): see ``text(status:)``. It has no status of its own: the error's is kept.
    case otherHTTPStatus = "http_NNN"

    // MARK: Connections (answered by the connection guard, outside any route)

    case malformedHTTP = "malformed_http"
    case requestTimeout = "request_timeout"
    case tooManyConnections = "too_many_connections"
    case tooManyConnectionsFromAddress = "too_many_connections_from_address"

    // MARK: Credentials

    case credentialsRequired = "credentials_required"
    case wrongDeviceSecret = "wrong_device_secret"
    case unknownUser = "unknown_user"
    case tokenRequired = "token_required"
    case invalidToken = "invalid_token"
    case tooManyAuthFailures = "too_many_auth_failures"

    // MARK: Registration

    case registrationRateLimited = "registration_rate_limited"
    case deviceLimitReached = "device_limit_reached"
    case registrationTokenRequired = "registration_token_required"
    case wrongRegistrationToken = "wrong_registration_token"

    // MARK: API tokens

    case tokenNameTaken = "token_name_taken"
    case tooManyTokens = "too_many_tokens"
    /// The API token lacks the scope the request needs (PushWard answers "insufficient permissions").
    case insufficientScope = "insufficient_scope"
    /// A refusal of PushWard's activity API with its own `code` (`activity.not_found`, …), answered as problem details.
    case pushWardProblem = "pushward_problem"
    /// A member the request's schema does not have (`POST /notifications`: `additionalProperties: false`); `field` names it.
    case unknownField = "unknown_field"
    /// `POST /notifications` names an `activity_slug` the token's device has no activity under (PushWard's
    /// `notification.activity_not_found`).
    case activityNotFound = "activity_not_found"
    /// The notification was answered before; the first answer stays (docs/api.md, "Answers").
    case alreadyAnswered = "already_answered"
    /// The activity takes no answer: it is not an `approval` card, or it ended unanswered (docs/activities.md,
    /// "Approval cards").
    case activityNotAnswerable = "activity_not_answerable"

    // MARK: Topics (issue 42)

    /// The topic has as many members as a topic may have (50).
    case topicFull = "topic_full"
    /// The device is a member of as many topics as a device may be (20).
    case tooManyTopics = "too_many_topics"
    /// Only the topic's creator may do this (list or remove members, rotate the join code, delete the topic).
    case notTopicCreator = "not_topic_creator"

    // MARK: Sending

    case deviceMustReregister = "device_must_reregister"
    case rateLimited = "rate_limited"
    case exemptLimitReached = "exempt_limit_reached"
    case backlogFull = "backlog_full"
    case payloadTooLarge = "payload_too_large"
    case rejectedByProvider = "rejected_by_provider"
    case storeUnavailable = "store_unavailable"

    // MARK: Home Assistant relay (its `errorType`s are the codes of its 500s)

    case missingPushToken = "missing_push_token"
    case invalidPushToken = "invalid_push_token"
    case unknownPushToken = "unknown_push_token"
    case homeAssistantInvalidToken = "InvalidToken"
    case homeAssistantPayloadTooLarge = "PayloadTooLarge"
    case homeAssistantInternalError = "InternalError"

    // MARK: WebSocket error results only

    case invalidFormat = "invalid_format"
    case notSubscribed = "not_subscribed"
    case unknownCommand = "unknown_command"
    case tooManySubscribes = "too_many_subscribes"

    /// The HTTP status of an answer with this code; `nil` for the codes only WebSocket results carry and for
    /// ``otherHTTPStatus``.
    public var status: HTTPResponse.Status? {
        switch self {
        case .malformedJSON, .invalidField, .malformedHTTP, .payloadTooLarge, .unknownField: .badRequest
        case .activityNotFound: .unprocessableContent
        case .alreadyAnswered, .activityNotAnswerable: .conflict
        case .credentialsRequired, .tokenRequired, .invalidToken, .registrationTokenRequired: .unauthorized
        case .wrongDeviceSecret, .wrongRegistrationToken, .missingPushToken, .invalidPushToken, .unknownPushToken,
            .insufficientScope:
            .forbidden
        case .notFound, .unknownUser: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .requestTimeout: .requestTimeout
        case .tokenNameTaken, .tooManyTokens, .topicFull, .tooManyTopics: .conflict
        case .notTopicCreator: .forbidden
        case .deviceMustReregister: .gone
        case .bodyTooLarge: .contentTooLarge
        case .upgradeRequired: .upgradeRequired
        case .tooManyAuthFailures, .registrationRateLimited, .rateLimited, .exemptLimitReached, .backlogFull,
            .tooManyConnectionsFromAddress:
            .tooManyRequests
        case .internalError, .homeAssistantInvalidToken, .homeAssistantPayloadTooLarge, .homeAssistantInternalError:
            .internalServerError
        case .rejectedByProvider: .badGateway
        case .tooManyConnections, .deviceLimitReached, .storeUnavailable: .serviceUnavailable
        case .otherHTTPStatus, .invalidFormat, .notSubscribed, .unknownCommand, .tooManySubscribes, .pushWardProblem: nil
        }
    }

    /// The sentence of an answer with this code when the refusal gives none of its own; `nil` where every refusal
    /// says something specific (which field, which limit, how long to wait).
    public var defaultMessage: String? {
        switch self {
        case .bodyTooLarge: "The request body is too large."
        case .notFound: "There is nothing at this address."
        case .methodNotAllowed: "This address does not take that method."
        case .upgradeRequired: "This address is a WebSocket channel: open it with a WebSocket upgrade (Upgrade: websocket)."
        case .internalError: "Herald hit an internal error; the request was not completed."
        case .tooManyConnections: "Herald has as many open connections as it accepts; try again shortly."
        case .tooManyConnectionsFromAddress:
            "Herald has as many open connections from this address as it accepts from one; close one, or try again shortly."
        case .credentialsRequired: "This endpoint needs the device owner's credentials as HTTP Basic user_id:device_secret."
        case .wrongDeviceSecret: "The device secret does not match this USER_ID."
        case .unknownUser: "No device is registered under this USER_ID."
        case .tokenRequired:
            "This endpoint needs an API token as Authorization: Bearer hrd_…; the device owner creates one with POST /api/push/tokens."
        case .invalidToken: "The API token is not valid."
        case .insufficientScope: "insufficient permissions: this API token lacks the scope this request needs."
        case .deviceLimitReached: "This Herald server has as many devices as its operator allows; no new device can register."
        case .registrationTokenRequired:
            "This server registers new devices only with its registration token in the X-Herald-Registration-Token header."
        case .wrongRegistrationToken: "The registration token is not this server's."
        case .storeUnavailable: "The store is not available; try again shortly."
        case .notTopicCreator: "Only the device that created this topic may do this."
        case .missingPushToken: "You did not send a token!"
        case .invalidPushToken: "That is not a valid Herald push token (a 64-hex USER_ID)."
        case .unknownPushToken: "No device is registered under this push token; register the app with Herald again."
        case .invalidFormat: "Messages must be JSON objects."
        case .notSubscribed: "Subscribe with push_notification_channel first."
        case .unknownCommand: "Unknown type; use push_notification_channel or push_notification_confirm."
        case .tooManySubscribes: "Too many subscriptions on this socket in a short time; subscribe again later."
        case .malformedJSON, .invalidField, .otherHTTPStatus, .malformedHTTP, .requestTimeout, .tooManyAuthFailures,
            .registrationRateLimited, .tokenNameTaken, .tooManyTokens, .deviceMustReregister, .rateLimited, .exemptLimitReached,
            .backlogFull, .payloadTooLarge, .unknownField, .activityNotFound, .alreadyAnswered, .activityNotAnswerable, .topicFull,
            .tooManyTopics, .rejectedByProvider, .pushWardProblem, .homeAssistantInvalidToken, .homeAssistantPayloadTooLarge,
            .homeAssistantInternalError:
            nil
        }
    }

    /// The code for an error of Hummingbird's own (unknown route, wrong method, body over the upload limit, …).
    init(hummingbirdStatus status: HTTPResponse.Status) {
        switch status {
        case .notFound: self = .notFound
        case .methodNotAllowed: self = .methodNotAllowed
        case .contentTooLarge: self = .bodyTooLarge
        default: self = .otherHTTPStatus
        }
    }

    /// The code as an answer with `status` carries it: the raw value, or `http_` and the status code for
    /// ``otherHTTPStatus``.
    public func text(status: HTTPResponse.Status) -> String {
        self == .otherHTTPStatus ? "http_\(status.code)" : rawValue
    }
}
