import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The document and the pending push are read and written through Herald's own JSON now: rows written by the
/// `Codable` encoders before read the same, and what is written reads back equal.
@Suite("Activity stored forms")
struct StoredFormTests {
    /// An activity with every member set: an approval card, answered, with TTLs and dates.
    func fullActivity() throws -> Activity {
        var activity = freshActivity(priority: 7)
        activity.state = .ended
        activity.content = ["template": "approval", "title": "Deploy?", "progress": 0.25, "options": [["id": "yes", "label": "Yes"]]]
        activity.endedTTL = 600
        activity.staleTTL = 60
        activity.dismissalTTL = 30
        activity.updatedAt = testNow.addingTimeInterval(5.25)
        activity.endedAt = testNow.addingTimeInterval(9)
        activity.deleteAt = testNow.addingTimeInterval(609)
        activity.memory.countdownWarningSent = true
        activity.memory.approvalAnswer = ApprovalAnswer(option: "yes", by: .user, answeredAt: testNow.addingTimeInterval(7.5))
        return activity
    }

    @Test func aDocumentWrittenByTheEarlierCodableEncoderReadsTheSame() throws {
        let activity = try fullActivity()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        let earlier = try encoder.encode(activity)
        #expect(try Activity(storedJSON: earlier) == activity)
        #expect(try Activity(storedJSON: activity.storedJSON()) == activity)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        #expect(try decoder.decode(Activity.self, from: Data(activity.storedJSON())) == activity, "an older Herald reads the new form")
    }

    @Test func aDocumentThatIsNotAnActivityIsADecodingError() {
        for text in [#"[]"#, #"{"id":"x"}"#, "{", #"{"id":"550E8400-E29B-41D4-A716-446655440000","slug":"a","name":"a","priority":1,"state":"paused"}"#] {
            #expect(throws: DecodingError.self) { try Activity(storedJSON: Array(text.utf8)) }
        }
    }

    @Test func aContentNumberThatIsNotFiniteIsRefusedAtItsMember() {
        var activity = freshActivity()
        activity.content = ["template": "gauge", "value": .double(.infinity)]
        #expect {
            _ = try activity.storedJSON()
        } throws: { error in
            guard case .invalidValue(_, let context) = error as? EncodingError else { return false }
            return context.codingPath.map(\.stringValue) == ["content", "value"]
        }
    }

    @Test func aPendingPushWrittenByTheEarlierCodableEncoderReadsTheSame() throws {
        let push = ActivityPush(
            event: .end, alert: ActivityAlert(title: "Oven", body: "Done"), sound: "default", staleDate: testNow,
            dismissalDate: testNow.addingTimeInterval(60.5), isAlerting: true)
        let earlier = try JSONEncoder().encode(push)
        #expect(ActivityPush(storedJSON: earlier) == push)
        #expect(ActivityPush(storedJSON: try push.storedJSON()) == push)
        #expect(try JSONDecoder().decode(ActivityPush.self, from: push.storedJSON()) == push, "an older Herald reads the new form")
        #expect(ActivityPush(storedJSON: Data("{}".utf8)) == nil)
    }
}
