import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The `approval` template's rules without sockets: what a card accepts and refuses, the answer, the end after it,
/// the expiry with `on_expire`, what a patch keeps, the payload and the API's `answer`.
@Suite("Approval cards")
struct ApprovalRulesTests {
    static func options(_ count: Int) -> String {
        "[" + (1...count).map { #"{"id":"o\#($0)","title":"Option \#($0)"}"# }.joined(separator: ",") + "]"
    }

    /// An ongoing approval card with `content` (the template and the question added).
    static func card(_ content: String = #""source":"ci","options":[{"id":"approve","title":"Approve"},{"id":"deny","title":"Deny"}]"#) throws -> Activity {
        let body = #"{"state":"ongoing","content":{"template":"approval","state":"Deploy to production?",\#(content)}}"#
        return try #require(try patched(freshActivity(), body).activity)
    }

    static let accepted: [String] = [
        #""options":\#(options(2))"#,
        #""options":\#(options(4))"#,
        #""options":[{"id":"\#(String(repeating: "i", count: 64))","title":"\#(String(repeating: "t", count: 64))"},{"id":"b","title":"B"}]"#,
        #""options":\#(options(2)),"source":"\#(String(repeating: "s", count: 128))""#,
        #""options":\#(options(3)),"end_date":1750000600,"on_expire":"o3""#,
        #""options":\#(options(2)),"duration":"10m","on_expire":"o1""#,
        #""options":\#(options(2)),"end_date":1750000600"#,
    ]

    @Test(arguments: accepted.indices)
    func acceptedCards(index: Int) throws {
        let activity = try Self.card(Self.accepted[index])
        #expect(activity.template == .approval)
        #expect(activity.memory.approvalAnswer == nil)
        #expect(ActivityJSON.object(activity)["answer"] == .null)
    }

    static let refused: [(content: String, location: String)] = [
        (#""subtitle":"no options""#, "body.content.options"),
        (#""options":\#(options(1))"#, "body.content.options"),
        (#""options":\#(options(5))"#, "body.content.options"),
        (#""options":"approve,deny""#, "body.content.options"),
        (#""options":["approve","deny"]"#, "body.content.options[0]"),
        (#""options":[{"title":"Approve"},{"id":"deny","title":"Deny"}]"#, "body.content.options[0].id"),
        (#""options":[{"id":"approve","title":"Approve"},{"id":"deny"}]"#, "body.content.options[1].title"),
        (#""options":[{"id":"","title":"Approve"},{"id":"deny","title":"Deny"}]"#, "body.content.options[0].id"),
        (#""options":[{"id":"a","title":""},{"id":"deny","title":"Deny"}]"#, "body.content.options[0].title"),
        (#""options":[{"id":5,"title":"Five"},{"id":"deny","title":"Deny"}]"#, "body.content.options[0].id"),
        (#""options":[{"id":"\#(String(repeating: "i", count: 65))","title":"A"},{"id":"b","title":"B"}]"#, "body.content.options[0].id"),
        (#""options":[{"id":"a","title":"\#(String(repeating: "t", count: 65))"},{"id":"b","title":"B"}]"#, "body.content.options[0].title"),
        (#""options":[{"id":"a","title":"A"},{"id":"a","title":"Again"}]"#, "body.content.options[1].id"),
        (#""options":[{"id":"a","title":"A","style":"red"},{"id":"b","title":"B"}]"#, "body.content.options[0].style"),
        (#""options":\#(options(2)),"end_date":1750000600,"on_expire":"o3""#, "body.content.on_expire"),
        (#""options":\#(options(2)),"on_expire":"o1""#, "body.content.on_expire"),
        (#""options":\#(options(2)),"source":"\#(String(repeating: "s", count: 129))""#, "body.content.source"),
        (#""options":\#(options(2)),"image_url":"https://a.example/x.jpg""#, "body.content.image_url"),
    ]

    @Test(arguments: refused.indices)
    func refusedCardsAre422AtTheMember(index: Int) {
        let (content, location) = Self.refused[index]
        #expect {
            _ = try Self.card(content)
        } throws: { error in
            guard let problem = error as? ActivityProblem else { return false }
            return problem.status == 422 && problem.code == .activityContentInvalid && problem.fieldErrors.first?.location == location
        }
    }

    @Test func theQuestionIsRequired() {
        let error = #expect(throws: ActivityProblem.self) {
            _ = try patched(freshActivity(), #"{"content":{"template":"approval","options":\#(Self.options(2))}}"#)
        }
        #expect(error?.fieldErrors.first?.location == "body.content.state")
    }

    @Test func theFirstAnswerWinsAndOnlyAnOptionOfAnOngoingCardIsTaken() throws {
        let card = try Self.card()
        let tap = testNow.addingTimeInterval(30)
        #expect(throws: ApprovalRefusal.unknownOption(allowed: ["approve", "deny"])) { try ApprovalRules.answer(card, option: "maybe", now: tap) }
        let answered = try ApprovalRules.answer(card, option: "deny", now: tap)
        #expect(answered.memory.approvalAnswer == ApprovalAnswer(option: "deny", by: .user, answeredAt: tap))
        #expect(answered.updatedAt == tap)
        let first = try #require(answered.memory.approvalAnswer)
        #expect(throws: ApprovalRefusal.alreadyAnswered(first)) { try ApprovalRules.answer(answered, option: "approve", now: tap) }
        #expect(throws: ApprovalRefusal.notApproval) { try ApprovalRules.answer(freshActivity(), option: "approve", now: tap) }
        let ended = try #require(try patched(card, #"{"state":"ended"}"#).activity)
        #expect(throws: ApprovalRefusal.notOngoing) { try ApprovalRules.answer(ended, option: "approve", now: tap) }
        #expect(ApprovalRules.isSettled(answered) && ApprovalRules.isSettled(ended) && ApprovalRules.isSettled(nil))
        #expect(!ApprovalRules.isSettled(card))
        #expect(ApprovalRules.isSettled(freshActivity()), "not an approval card: nothing to wait for")
    }

    @Test func anAnsweredCardEndsFiveSecondsAfterTheTapShowingTheAnswer() throws {
        let tap = testNow.addingTimeInterval(30)
        let answered = try ApprovalRules.answer(try Self.card(#""source":"ci","options":\#(Self.options(2)),"end_date":1750000600,"on_expire":"o2""#), option: "o1", now: tap)
        let due = try #require(ActivitySchedule.nextDue(of: answered))
        #expect(due == ActivityDue(kind: .approvalEnd, at: tap.addingTimeInterval(5)))
        #expect(ActivityRules().run(due, on: answered, now: tap.addingTimeInterval(4)) == nil, "not yet")
        let outcome = try #require(ActivityRules().run(due, on: answered, now: due.at))
        let ended = try #require(outcome.activity)
        #expect(ended.state == .ended)
        #expect(ended.memory.approvalAnswer?.option == "o1" && ended.memory.approvalAnswer?.by == .user)
        #expect(outcome.push?.event == .end)
        let push = try #require(outcome.push)
        let payload = try LiveActivityPayload.render(activity: ended, push: push, timestamp: 1_750_000_035, now: due.at)
        let state = try #require(try aps(payload)["content-state"]?.objectValue)
        #expect(state["answer"] == ["option": "o1", "by": "user", "answered_at": 1_750_000_030])
        #expect(state["state"] == "Deploy to production?" && state["source"] == "ci")
        #expect(state["options"]?.arrayValue?.count == 2)
        #expect(ActivityJSON.object(ended)["answer"] == ["option": "o1", "by": "user", "answered_at": "2025-06-15T15:07:10Z"])
    }

    @Test func anUnansweredCardTakesOnExpireAtItsEndDate() throws {
        let card = try Self.card(#""options":\#(Self.options(3)),"end_date":1750000600,"on_expire":"o3""#)
        let due = try #require(ActivitySchedule.nextDue(of: card))
        #expect(due == ActivityDue(kind: .approvalExpiry, at: Date(timeIntervalSince1970: 1_750_000_600)))
        let late = due.at.addingTimeInterval(2)
        let outcome = try #require(ActivityRules().run(due, on: card, now: late))
        #expect(outcome.activity?.state == .ended)
        #expect(outcome.activity?.memory.approvalAnswer == ApprovalAnswer(option: "o3", by: .expired, answeredAt: late))
        #expect(outcome.push?.event == .end)
        // Without on_expire the card ends unanswered; without end_date nothing is due.
        let open = try Self.card(#""options":\#(Self.options(2)),"end_date":1750000600"#)
        let openDue = try #require(ActivitySchedule.nextDue(of: open))
        let unanswered = try #require(ActivityRules().run(openDue, on: open, now: late))
        #expect(unanswered.activity?.state == .ended && unanswered.activity?.memory.approvalAnswer == nil)
        #expect(ActivitySchedule.nextDue(of: try Self.card()) == nil)
    }

    @Test func aPatchKeepsTheAnswerUnlessTheOptionsChange() throws {
        let answered = try ApprovalRules.answer(try Self.card(), option: "approve", now: testNow)
        let reworded = try #require(try patched(answered, #"{"content":{"state":"Deploy now?","answer":{"option":"deny","by":"user"}}}"#).activity)
        #expect(reworded.memory.approvalAnswer?.option == "approve")
        #expect(reworded.content["answer"] == nil, "a client's answer member is never stored")
        let ended = try #require(try patched(reworded, #"{"state":"ended"}"#).activity)
        let restarted = try #require(try patched(ended, #"{"state":"ongoing"}"#).activity)
        #expect(restarted.memory.approvalAnswer?.option == "approve", "started again with the same buttons: the answer stays")
        let newQuestion = #"{"content":{"state":"Roll back?","options":[{"id":"yes","title":"Yes"},{"id":"no","title":"No"}]}}"#
        #expect(try patched(reworded, newQuestion).activity?.memory.approvalAnswer == nil)
        #expect(try patched(reworded, #"{"content":{"template":"generic"}}"#).activity?.memory.approvalAnswer == nil)
    }

    @Test func aStoredCardKeepsItsAnswerAndOlderDocumentsReadUnanswered() throws {
        let answered = try ApprovalRules.answer(try Self.card(), option: "deny", now: testNow)
        let parts = try answered.storedParts()
        let read = try Activity(storedDocument: parts.document, extras: parts.extras)
        #expect(read.memory.approvalAnswer == answered.memory.approvalAnswer)
        var older = try Self.card()
        older.memory.approvalAnswer = nil
        #expect(try Activity(storedJSON: older.storedJSON()).memory.approvalAnswer == nil)
    }

    @Test func theSizeCheckCountsTheLongestAnswerTheCardCanGet() throws {
        // A card whose start push fits with 20 bytes to spare, unanswered: its answer (about 130 bytes) would not fit.
        var card = try Self.card(#""options":[{"id":"\#(String(repeating: "i", count: 64))","title":"A"},{"id":"b","title":"B"}]"#)
        let trial = ActivityPush(
            event: .start, alert: ActivityAlert(title: card.name, body: "Deploy to production?"), sound: "notification", staleDate: testNow,
            isAlerting: true)
        card.content["accent_color"] = ""
        let base = try LiveActivityPayload.render(activity: card, push: trial, timestamp: 1_750_000_000, now: testNow).count
        card.content["accent_color"] = .string(String(repeating: "c", count: LiveActivityPayload.maximumBytes - 20 - base))
        #expect(try LiveActivityPayload.render(activity: card, push: trial, timestamp: 1_750_000_000, now: testNow).count == 4_076)
        #expect(throws: ActivityProblem.self) { try ActivityRules().checkFits(card, now: testNow) }
        card.content["accent_color"] = .string(String(repeating: "c", count: LiveActivityPayload.maximumBytes - 200 - base))
        try ActivityRules().checkFits(card, now: testNow)
    }

    @Test func waitIsWholeSecondsClampedTo25() throws {
        #expect(try ActivityWait.seconds(nil) == 0)
        #expect(try ActivityWait.seconds("") == 0)
        #expect(try ActivityWait.seconds("3") == 3)
        #expect(try ActivityWait.seconds("25") == 25)
        #expect(try ActivityWait.seconds("26") == 25)
        #expect(try ActivityWait.seconds("99999999999999999999999") == 25)
        for given in ["-1", "abc", "1.5", " 2", "+3"] {
            let error = #expect(throws: ActivityProblem.self, "\(given)") { _ = try ActivityWait.seconds(given) }
            #expect(error?.status == 400 && error?.fieldErrors.first?.location == "query.wait", "\(given)")
        }
    }
}
