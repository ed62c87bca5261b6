import Foundation
import HeraldCore

/// A receipt's tags as both stores keep them: a JSON array in a text column.
enum ReceiptTags {
    static func text(_ tags: [String]) -> String {
        (try? JSONValue.array(tags.map(JSONValue.string)).encoded()).flatMap { String(data: $0, encoding: .utf8) } ?? "[]"
    }

    static func tags(_ text: String) -> [String] {
        guard case .array(let items)? = try? JSONValue.decode(Data(text.utf8)) else { return [] }
        return items.compactMap(\.stringValue)
    }
}
