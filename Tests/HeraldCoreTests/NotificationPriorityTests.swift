import Foundation
import HeraldCore
import Testing

@Suite("Notification priority")
struct NotificationPriorityTests {
    @Test func eachLevelIsItsAPNsNumberAndOnlyThoseNumbersAreLevels() {
        #expect(NotificationPriority.allCases.map(\.apnsValue) == [1, 5, 10])
        #expect(NotificationPriority.allCases.map { NotificationPriority(apnsValue: $0.apnsValue) } == [.low, .normal, .high])
        for number in [Int.min, -1, 0, 2, 4, 6, 9, 11, 100, Int.max] {
            #expect(NotificationPriority(apnsValue: number) == nil, "\(number) is no apns-priority")
        }
    }

    @Test func aLiteralIsTheAPNsNumber() {
        let high: NotificationPriority = 10
        let normal: NotificationPriority = 5
        let low: NotificationPriority = 1
        #expect([high, normal, low] == [.high, .normal, .low])
    }

    @Test func levelsAreOrderedByUrgency() {
        #expect(NotificationPriority.low < .normal && NotificationPriority.normal < .high)
        #expect(NotificationPriority.allCases.sorted() == [.low, .normal, .high])
    }

    /// Herald stored the bare number; the three it wrote read back as themselves, anything else never reads higher than
    /// it says, and nothing traps.
    @Test func aStoredNumberReadsBackAsItsLevelNeverHigher() {
        #expect([10, 5, 1].map(NotificationPriority.init(stored:)) == [.high, .normal, .low])
        #expect([11, Int.max].map(NotificationPriority.init(stored:)) == [.high, .high])
        #expect([9, 6].map(NotificationPriority.init(stored:)) == [.normal, .normal])
        #expect([4, 2, 0, -1, Int.min].map(NotificationPriority.init(stored:)) == [.low, .low, .low, .low, .low])
    }

    @Test func anAlertIsHighUnlessItIsPassive() {
        #expect(NotificationPriority.alert(at: .passive) == .normal)
        for level in [NotificationContent.Level.active, .timeSensitive, .critical] {
            #expect(NotificationPriority.alert(at: level) == .high)
        }
        #expect(NotificationPriority.alert(at: nil) == .high)
    }

    /// A scheduled send's draft (ntfy's `delay`) as today's code and the code before the type wrote it: `priority` is
    /// the bare APNs number.
    @Test func aStoredDraftWrittenBeforeTheTypeReadsBack() throws {
        let text = #"{"content":{"body":"Later","level":"passive"},"priority":5,"push_type":"alert"}"#
        let json = try #require(try JSONValue.decode(Data(text.utf8)).objectValue)
        let draft = try #require(NotificationDraft(storedJSON: json))
        #expect(draft.priority == .normal)
        #expect(draft.content.level == .passive)
        #expect(String(decoding: try JSONValue.object(draft.storedJSON).encoded(), as: UTF8.self) == text)
        for priority in NotificationPriority.allCases {
            let written = NotificationDraft(priority: priority, content: NotificationContent(body: "x")).storedJSON
            #expect(written["priority"] == .int(priority.apnsValue))
            #expect(NotificationDraft(storedJSON: written)?.priority == priority)
        }
    }
}
