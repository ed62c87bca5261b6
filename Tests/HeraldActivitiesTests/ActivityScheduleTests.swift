import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldActivities

/// The server-managed behaviours: when each falls due and what running it does, on a clock moved by hand.
@Suite("Activity schedule")
struct ActivityScheduleTests {
    let rules = ActivityRules()

    func countdown(_ content: String = #"{"template":"countdown","duration":"25m","warning_threshold":60,"completion_message":"Done baking!"}"#) throws
        -> Activity
    {
        try #require(try patched(freshActivity("oven", name: "Oven"), #"{"state":"ongoing","content":\#(content)}"#).activity)
    }

    @Test func aCountdownWarnsAtItsThresholdThenEndsWithItsCompletionMessage() throws {
        let clock = TestClock(testNow)
        var activity = try countdown()
        let warning = try #require(ActivitySchedule.nextDue(of: activity))
        #expect(warning == ActivityDue(kind: .countdownWarning, at: testNow.addingTimeInterval(1_440)))
        clock.advance(by: 1_439)
        #expect(rules.run(warning, on: activity, now: clock.now()) == nil, "not before its time")
        clock.advance(by: 1)
        let warned = try #require(rules.run(warning, on: activity, now: clock.now()))
        #expect(warned.push?.event == .update)
        #expect(warned.push?.apnsPriority == 10)
        #expect(warned.push?.alert == ActivityAlert(title: "Oven", body: "1 minute left"))
        activity = try #require(warned.activity)
        #expect(activity.content["accent_color"] == "orange")
        #expect(activity.content["warning_pushed"] == true)
        #expect(rules.run(warning, on: activity, now: clock.now()) == nil, "the warning goes out once")
        let end = try #require(ActivitySchedule.nextDue(of: activity))
        #expect(end == ActivityDue(kind: .countdownEnd, at: testNow.addingTimeInterval(1_500)))
        clock.advance(by: 60)
        let ended = try #require(rules.run(end, on: activity, now: clock.now()))
        #expect(ended.push?.event == .end)
        #expect(ended.push?.alert?.body == "Done baking!")
        #expect(ended.activity?.state == .ended)
        #expect(ended.activity?.content["state"] == "Done baking!")
        #expect(ended.activity?.content["progress"] == .double(1))
        #expect(ended.activity?.content["warning_pushed"] == nil)
        #expect(ActivitySchedule.nextDue(of: ended.activity!)?.kind == .endedExpiry)
    }

    @Test func aNewEndDateArmsTheWarningAgainAndSnoozeMovesTheEnd() throws {
        let activity = try countdown()
        let warned = try #require(rules.run(ActivitySchedule.nextDue(of: activity)!, on: activity, now: testNow.addingTimeInterval(1_440))?.activity)
        #expect(ActivitySchedule.nextDue(of: warned)?.kind == .countdownEnd)
        let moved = try #require(try patched(warned, #"{"content":{"end_date":1750009000}}"#).activity)
        #expect(ActivitySchedule.nextDue(of: moved) == ActivityDue(kind: .countdownWarning, at: Date(timeIntervalSince1970: 1_750_008_940)))
        let snoozed = try #require(
            try rules.apply(.snooze(seconds: 600), to: warned, device: ActivityDeviceFacts(activityCount: 1), now: testNow.addingTimeInterval(1_450)).activity)
        #expect(ActivitySchedule.nextDue(of: snoozed) == ActivityDue(kind: .countdownWarning, at: testNow.addingTimeInterval(2_040)), "warned again")
        let late = try #require(
            try rules.apply(.snooze(seconds: 60), to: warned, device: ActivityDeviceFacts(activityCount: 1), now: testNow.addingTimeInterval(1_500)).activity)
        #expect(ActivitySchedule.nextDue(of: late) == ActivityDue(kind: .countdownEnd, at: testNow.addingTimeInterval(1_560)), "inside the threshold")
    }

    @Test func anOngoingActivityWithoutUpdatesForStaleTTLIsEndedAsStale() throws {
        let activity = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","stale_ttl":1800,"dismissal_ttl":0,"content":{"template":"generic","state":"Washing"}}"#)
                .activity)
        let due = try #require(ActivitySchedule.nextDue(of: activity))
        #expect(due == ActivityDue(kind: .staleEnd, at: testNow.addingTimeInterval(1_800)))
        let updated = try #require(try patched(activity, #"{"content":{"progress":0.5}}"#, at: testNow.addingTimeInterval(1_000)).activity)
        #expect(rules.run(due, on: updated, now: testNow.addingTimeInterval(1_800)) == nil, "an update moved it")
        let stale = try #require(rules.run(due, on: activity, now: testNow.addingTimeInterval(1_801)))
        #expect(stale.activity?.state == .ended)
        #expect(stale.activity?.content["state"] == "Stale (auto-ended)")
        #expect(stale.activity?.content["accent_color"] == "#8E8E93")
        #expect(stale.activity?.content["icon"] == "clock.badge.xmark")
        #expect(stale.push?.event == .end)
        #expect(stale.push?.dismissalDate == testNow.addingTimeInterval(1_801), "dismissal_ttl 0 applies to server ends")
    }

    @Test func anEndedActivityIsDeletedAtDeleteAtOrThirtyDaysAfterItsLastChange() throws {
        let running = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"generic"}}"#).activity)
        let withTTL = try #require(try patched(running, #"{"state":"ended","ended_ttl":300}"#).activity)
        let due = try #require(ActivitySchedule.nextDue(of: withTTL))
        #expect(due == ActivityDue(kind: .endedExpiry, at: testNow.addingTimeInterval(300)))
        let deleted = try #require(rules.run(due, on: withTTL, now: testNow.addingTimeInterval(300)))
        #expect(deleted.activity == nil)
        #expect(deleted.action == .deleted)
        #expect(deleted.push == nil)
        let withoutTTL = try #require(try patched(running, #"{"state":"ended"}"#).activity)
        #expect(ActivitySchedule.nextDue(of: withoutTTL)?.at == testNow.addingTimeInterval(2_592_000))
        #expect(ActivitySchedule.nextDue(of: freshActivity())?.kind == .endedExpiry, "a never-started activity expires too")
    }

    @Test func theEarliestDueWins() throws {
        let short = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","stale_ttl":60,"content":{"template":"countdown","duration":600,"warning_threshold":30}}"#)
                .activity)
        #expect(ActivitySchedule.nextDue(of: short)?.kind == .staleEnd)
        let plain = try #require(try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"generic"}}"#).activity)
        #expect(ActivitySchedule.nextDue(of: plain) == nil, "an ongoing activity without TTL or countdown has nothing due")
    }
}
