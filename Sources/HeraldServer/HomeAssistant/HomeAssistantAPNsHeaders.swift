import Foundation
import HeraldCore

/// The APNs headers a Home Assistant call may set (`data.apns_headers`, or `data.apns.headers`), as the relay passes
/// them on. Herald takes the four that describe the notification; one that would send it elsewhere or as someone
/// else (`apns-topic`, `apns-id`, `authorization`, …) is refused with 400. `apns-push-type` is accepted and, as
/// the relay does, replaced by the type the payload calls for (`background` for a command, `alert` otherwise). A value
/// with a control character is refused with 400 (``HeaderValueRule``).
enum HomeAssistantAPNsHeaders {
    static let settable: Set<String> = ["apns-priority", "apns-push-type", "apns-collapse-id", "apns-expiration"]

    static func apply(_ headers: [String: String], to draft: inout NotificationDraft, now: Date) throws {
        for (name, text) in headers.sorted(by: { $0.key < $1.key }) {
            let path = "data.apns_headers.\(name)"
            if settable.contains(name) { _ = try HeaderValueRule.validated(text, field: path) }
            switch name {
            case "apns-priority":
                guard let priority = Int(text).flatMap(NotificationPriority.init(apnsValue:)) else {
                    throw APIError.invalidField(path, "\(path) must be 1, 5 or 10.")
                }
                draft.priority = priority
            case "apns-collapse-id":
                let collapseID = try CollapseIDRule.validated(text, field: path)
                draft.collapseID = collapseID.isEmpty ? nil : collapseID
            case "apns-expiration":
                guard let seconds = Int(text), seconds >= 0 else { throw APIError.invalidField(path, "\(path) must be UNIX seconds (0 = one minute from now).") }
                draft.expiresAt = seconds == 0 ? now.addingTimeInterval(60) : Date(timeIntervalSince1970: TimeInterval(seconds))
            case "apns-push-type":
                break
            default:
                throw APIError.invalidField(
                    path, "\(name) cannot be set; data.apns_headers may set \(settable.sorted().joined(separator: ", ")).")
            }
        }
        if draft.pushType == .background, draft.priority == .high {
            throw APIError.invalidField("data.apns_headers.apns-priority", "A background push must have apns-priority 5 or 1.")
        }
    }
}
