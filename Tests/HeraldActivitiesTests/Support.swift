import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The time every test starts at: 2025-06-15T15:06:40Z, within the documents' example dates.
let testNow = Date(timeIntervalSince1970: 1_750_000_000)

/// The bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// An activity as `POST /activities` creates it, at `testNow` unless told.
func freshActivity(_ slug: String = "dishwasher", name: String = "Dishwasher", priority: Int = 0, at now: Date = testNow) -> Activity {
    Activity(id: UUID(uuidString: "550E8400-E29B-41D4-A716-446655440000")!, slug: slug, name: name, priority: priority, createdAt: now)
}

/// `body` (a PATCH body) applied to `activity` by the default rules.
func patched(
    _ activity: Activity, _ body: String, device: ActivityDeviceFacts = ActivityDeviceFacts(activityCount: 1), at now: Date = testNow
) throws(ActivityProblem) -> ActivityOutcome {
    let patch = try ActivityRequest.patch(json: bytes(body))
    return try ActivityRules().apply(.patch(slug: activity.slug, patch, upsert: false), to: activity, device: device, now: now)
}

/// The JSON text of a value, keys sorted.
func text(_ value: JSONValue) -> String {
    String(decoding: (try? value.encoded()) ?? Data(), as: UTF8.self)
}

/// The payload's `aps` object.
func aps(_ payload: [UInt8]) throws -> JSONObject {
    try #require(try JSONValue.decode(Data(payload)).objectValue?["aps"]?.objectValue)
}
