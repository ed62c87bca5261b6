import Foundation
import HeraldCore

/// Helpers for building FCM `message` objects (docs/payloads.md): what every dialect's FCM mapping shares.
enum FCMMessage {
    /// Where the body sits in a message with a `notification` block.
    static let notificationBodyPath = ["notification", "body"]

    /// A value as FCM `data` takes it: strings as they are, numbers and booleans as their JSON text, objects and
    /// arrays as compact JSON.
    static func dataString(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return ""
        default: return (try? value.encoded()).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
    }

    /// A `data` map: `nil` values are left out, every other value becomes a string.
    static func data(_ entries: [String: JSONValue?]) -> JSONObject {
        var data: JSONObject = [:]
        for (key, value) in entries {
            if let value { data[key] = .string(dataString(value)) }
        }
        return data
    }
}
