import Foundation
import HeraldCore

/// `acknowledge` on `POST /notifications` (issue 39, section 3; docs/api.md, "Receipts"): repeat the push every
/// `repeat_seconds` (30 to 3600, default 60) until an answer action is tapped or `expire_seconds` (60 to 10800,
/// default 3600) pass. Whole seconds (`60.0` is 60; `60.5`, strings and numbers past the range are refused).
struct AcknowledgeRequest: Equatable {
    var repeatSeconds: Int
    var expireSeconds: Int

    /// `nil` when the member is absent or `null`; an empty object takes both defaults.
    init?(_ fields: FieldReader) throws {
        guard let acknowledge = try fields.optionalObject("acknowledge", emptyStringIsAbsent: false) else { return nil }
        try acknowledge.refuseUnknownMembers(allowed: ["repeat_seconds", "expire_seconds"])
        repeatSeconds = try Self.seconds(acknowledge, "repeat_seconds", in: ReceiptRules.repeatSeconds) ?? ReceiptRules.defaultRepeatSeconds
        expireSeconds = try Self.seconds(acknowledge, "expire_seconds", in: ReceiptRules.expireSeconds) ?? ReceiptRules.defaultExpireSeconds
    }

    init(repeatSeconds: Int = ReceiptRules.defaultRepeatSeconds, expireSeconds: Int = ReceiptRules.defaultExpireSeconds) {
        self.repeatSeconds = repeatSeconds
        self.expireSeconds = expireSeconds
    }

    /// A whole number of seconds in `range`; checked as a double first, so no number converts with a trap.
    private static func seconds(_ fields: FieldReader, _ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let value = fields.value(key) else { return nil }
        let field = fields.path(of: key)
        let refusal = APIError.invalidField(
            field, "\(field) must be a whole number of seconds from \(range.lowerBound) to \(range.upperBound).")
        switch value {
        case .int(let seconds):
            guard range.contains(seconds) else { throw refusal }
            return seconds
        case .double(let seconds):
            // `Int(exactly:)`: nil for a fraction, NaN, infinity or a value beyond Int, so nothing here can trap.
            guard let whole = Int(exactly: seconds), range.contains(whole) else { throw refusal }
            return whole
        default:
            throw refusal
        }
    }

    /// The rules that tie `acknowledge` to the rest of the request: refused with `push: false` or `level: passive` (a
    /// notification that does not alert cannot be acknowledged); without an answer action, Herald's `pw_ack`
    /// ("Acknowledge") is added, which needs room among the ten actions and its id free.
    static func check(_ request: inout ActionNotificationRequest) throws {
        guard request.acknowledge != nil else { return }
        guard request.pushWard.push else {
            throw APIError.invalidField("acknowledge", "acknowledge repeats a push; it cannot be sent with push: false.")
        }
        guard request.level != .passive else {
            throw APIError.invalidField("acknowledge", "acknowledge repeats an alert; it cannot be sent with level \"passive\".")
        }
        guard !request.isAnswerable else { return }
        guard request.actions.count < ActionButton.maximumCount else {
            throw APIError.invalidField(
                "acknowledge",
                "acknowledge needs an action without a url to acknowledge with; give one, or at most \(ActionButton.maximumCount - 1) "
                    + "actions so that Herald can add \"\(ReceiptRules.acknowledgeActionID)\".")
        }
        guard !request.actions.contains(where: { $0.id == ReceiptRules.acknowledgeActionID }) else {
            throw APIError.invalidField(
                "acknowledge", "acknowledge adds the action \"\(ReceiptRules.acknowledgeActionID)\"; that id is taken by an action with a url.")
        }
        request.actions.append(
            try ActionButton(
                FieldReader([
                    "id": .string(ReceiptRules.acknowledgeActionID), "title": .string(ReceiptRules.acknowledgeActionTitle),
                ])))
    }
}
