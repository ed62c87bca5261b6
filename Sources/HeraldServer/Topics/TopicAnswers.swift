import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// The answer to a send that named a topic id (the camera API's shape; ntfy, Gotify and Bark answer in their own):
/// 201 `{"delivery": "all"|"partial", "members": [{"member_id", "id"?, "delivery", "reason"?, "message"?,
/// "truncated"?}]}`. When no member's notification was stored (`delivery: "none"`), the answer is the first member's
/// refusal, as a send to that device alone would have been answered (429 for its limit, 410 for a dead token, …),
/// with `delivery` and `members` added to the error's body.
enum TopicAnswers {
    /// One member's outcome: its membership id, its notification id (absent when skipped), the delivery word, and the
    /// error code and sentence of a refusal (`rate_limited`, `backlog_full`, `device_must_reregister`, …).
    static func member(_ outcome: FanoutMemberOutcome, now: Date) -> JSONValue {
        var json: JSONObject = [
            "member_id": .string(outcome.memberID.lowercasedText), "delivery": .string(outcome.delivery.rawValue),
        ]
        if let notification = outcome.notification { json["id"] = .string(notification.id.lowercasedText) }
        if let reason = outcome.reason {
            let error = SendAnswers.apiError(reason, now: now)
            json["reason"] = .string(error.code.rawValue)
            json["message"] = .string(error.message)
        }
        if outcome.truncated { json["truncated"] = true }
        return .object(json)
    }

    static func members(_ receipt: FanoutReceipt, now: Date) -> JSONValue {
        .array(receipt.members.map { member($0, now: now) })
    }

    /// The refusal of a send none of whose notifications was stored: the first member's, in Herald's shape.
    static func refusal(_ receipt: FanoutReceipt, now: Date) -> APIError {
        let first = receipt.members.first { $0.reason != nil }?.reason
        var error =
            first.map { SendAnswers.apiError($0, now: now) }
            ?? APIError(.notFound, message: "This topic has no member to send to.")
        error.extra["delivery"] = .string(FanoutDelivery.none.rawValue)
        error.extra["members"] = members(receipt, now: now)
        return error
    }

    /// The camera API's answer: 201 with every member's outcome, or ``refusal(_:now:)``.
    static func created(_ receipt: FanoutReceipt, now: Date) throws -> Response {
        guard receipt.delivery != .none else { throw refusal(receipt, now: now) }
        return JSONResponse.make(
            status: .created, body: ["delivery": .string(receipt.delivery.rawValue), "members": members(receipt, now: now)])
    }
}
