import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The state machine, the limits, eviction and the TTLs' dates, with `now` passed in.
@Suite("Activity rules")
struct ActivityRulesTests {
    let rules = ActivityRules()
    let start = #"{"state":"ongoing","content":{"template":"generic","progress":0.1,"state":"Washing"}}"#

    func ongoing(_ slug: String, priority: Int = 0, updatedAt: Date = testNow) throws -> Activity {
        var activity = try #require(try patched(freshActivity(slug, priority: priority), start).activity)
        activity.updatedAt = updatedAt
        return activity
    }

    @Test func createStartsEndedAndARepostRefreshesOnlyNamePriorityAndTTLs() throws {
        let created = try rules.apply(
            .create(ActivityCreateRequest(slug: "dishwasher", name: "Dishwasher", priority: 3)), to: nil, device: ActivityDeviceFacts(), now: testNow)
        #expect(created.action == .created)
        #expect(created.push == nil)
        let activity = try #require(created.activity)
        #expect(activity.state == .ended)
        #expect(activity.endedAt == nil, "created ended, never ended")
        let started = try #require(try patched(activity, start).activity)
        let later = testNow.addingTimeInterval(60)
        let refreshed = try rules.apply(
            .create(ActivityCreateRequest(slug: "dishwasher", name: "Dish washer", staleTTL: 600)), to: started, device: ActivityDeviceFacts(activityCount: 1),
            now: later)
        #expect(refreshed.action == .updated)
        #expect(refreshed.activity?.name == "Dish washer")
        #expect(refreshed.activity?.priority == 3, "a priority left out is kept")
        #expect(refreshed.activity?.staleTTL == 600)
        #expect(refreshed.activity?.state == .ongoing)
        #expect(refreshed.activity?.content == started.content)
    }

    @Test func theStateMachinePushesStartUpdateEndAndNothingWhileEnded() throws {
        let start = try patched(freshActivity(), self.start)
        #expect(start.push?.event == .start)
        #expect(start.push?.apnsPriority == 10)
        #expect(start.push?.alert == ActivityAlert(title: "Dishwasher", body: "Washing"))
        let update = try patched(start.activity!, #"{"content":{"progress":0.5}}"#)
        #expect(update.push?.event == .update)
        #expect(update.push?.apnsPriority == 5, "an update without sound is silent")
        #expect(update.push?.alert == nil)
        let end = try patched(update.activity!, #"{"state":"ended","sound":"chime"}"#)
        #expect(end.push?.event == .end)
        #expect(end.push?.sound == nil, "sound is ignored on an end")
        #expect(end.activity?.endedAt == testNow)
        let whileEnded = try patched(end.activity!, #"{"content":{"progress":1}}"#, at: testNow.addingTimeInterval(10))
        #expect(whileEnded.push == nil)
        #expect(whileEnded.activity?.state == .ended)
        #expect(whileEnded.activity?.endedAt == testNow, "ended_at is kept")
        let restarted = try patched(whileEnded.activity!, #"{"state":"ongoing"}"#)
        #expect(restarted.push?.event == .start)
    }

    @Test func aStateOtherThanOngoingOrEndedIs400() throws {
        for body in [#"{"state":"paused"}"#, #"{"state":"preempted"}"#, #"{"state":3}"#] {
            #expect {
                _ = try ActivityRequest.patch(json: bytes(body))
            } throws: { ($0 as? ActivityProblem)?.code == .activityStateInvalid && ($0 as? ActivityProblem)?.status == 400 }
        }
        let upper = try ActivityRequest.patch(json: bytes(#"{"state":"ONGOING"}"#))
        #expect(upper.state == .ongoing, "case-insensitive")
    }

    @Test func aPreemptedActivityNeedsAnExplicitState() throws {
        var preempted = try ongoing("a")
        preempted.state = .preempted
        #expect {
            _ = try patched(preempted, #"{"content":{"progress":0.3}}"#)
        } throws: { ($0 as? ActivityProblem)?.code == .activityStateInvalid }
        let restarted = try patched(preempted, #"{"state":"ongoing"}"#)
        #expect(restarted.push?.event == .start)
        let ended = try patched(preempted, #"{"state":"ended"}"#)
        #expect(ended.push == nil, "nothing is on the phone")
        #expect(ended.activity?.state == .ended)
    }

    @Test func theSixthOngoingEvictsTheLowestPriorityThenTheOldestUpdate() throws {
        let others = [
            try ongoing("a", priority: 5, updatedAt: testNow.addingTimeInterval(-50)),
            try ongoing("b", priority: 1, updatedAt: testNow.addingTimeInterval(-10)),
            try ongoing("c", priority: 1, updatedAt: testNow.addingTimeInterval(-40)),
            try ongoing("d", priority: 2, updatedAt: testNow.addingTimeInterval(-90)),
            try ongoing("e", priority: 9, updatedAt: testNow.addingTimeInterval(-99)),
        ]
        let outcome = try patched(freshActivity("f"), start, device: ActivityDeviceFacts(ongoing: others, activityCount: 6))
        #expect(outcome.evictions.map(\.activity.slug) == ["c"])
        let eviction = try #require(outcome.evictions.first)
        #expect(eviction.activity.state == .preempted)
        #expect(eviction.push.event == .end)
        #expect(eviction.push.dismissalDate == testNow.addingTimeInterval(14_400), "preempted cards keep the default linger")
        let fewer = try patched(freshActivity("f"), start, device: ActivityDeviceFacts(ongoing: Array(others.prefix(4)), activityCount: 5))
        #expect(fewer.evictions.isEmpty)
    }

    @Test func anEvictedCardLingersByEndedTTLEvenWithDismissalTTL() throws {
        var others = try (0..<5).map { try ongoing("a\($0)", priority: 3) }
        others[2].priority = 0
        others[2].endedTTL = 600
        others[2].dismissalTTL = 0
        let outcome = try patched(freshActivity("new"), start, device: ActivityDeviceFacts(ongoing: others, activityCount: 6))
        #expect(outcome.evictions.first?.activity.slug == "a2")
        #expect(outcome.evictions.first?.push.dismissalDate == testNow.addingTimeInterval(600))
    }

    @Test func theFiftyFirstActivityIs409() {
        let device = ActivityDeviceFacts(activityCount: 50)
        for change in [
            ActivityChange.create(ActivityCreateRequest(slug: "x", name: "X")),
            .patch(slug: "x", ActivityPatch(state: .ongoing), upsert: true),
        ] {
            #expect {
                _ = try rules.apply(change, to: nil, device: device, now: testNow)
            } throws: { ($0 as? ActivityProblem)?.code == .activityLimitExceeded && ($0 as? ActivityProblem)?.status == 409 }
        }
        #expect(throws: Never.self) {
            _ = try rules.apply(.create(ActivityCreateRequest(slug: "x", name: "X")), to: nil, device: ActivityDeviceFacts(activityCount: 49), now: testNow)
        }
    }

    @Test func aMissingSlugIs404WithoutUpsert() {
        for change in [ActivityChange.patch(slug: "x", ActivityPatch(), upsert: false), .delete, .snooze(seconds: nil)] {
            #expect {
                _ = try rules.apply(change, to: nil, device: ActivityDeviceFacts(), now: testNow)
            } throws: { ($0 as? ActivityProblem) == .notFound }
        }
    }

    @Test func aStartWithoutAPushToStartTokenIs409() throws {
        #expect {
            _ = try patched(freshActivity(), start, device: ActivityDeviceFacts(activityCount: 1, canPushToStart: false))
        } throws: { ($0 as? ActivityProblem)?.status == 409 && ($0 as? ActivityProblem)?.code == .activityPushToStartUnavailable }
        let running = try ongoing("a")
        #expect(throws: Never.self) {
            _ = try patched(running, #"{"content":{"progress":0.9}}"#, device: ActivityDeviceFacts(activityCount: 1, canPushToStart: false))
        }
    }

    @Test func theDismissalDateFollowsDismissalTTLThenEndedTTLCappedAtFourHours() throws {
        let running = try ongoing("a")
        #expect(try patched(running, #"{"state":"ended"}"#).push?.dismissalDate == testNow.addingTimeInterval(14_400))
        #expect(try patched(running, #"{"state":"ended","ended_ttl":300}"#).push?.dismissalDate == testNow.addingTimeInterval(300))
        #expect(try patched(running, #"{"state":"ended","ended_ttl":86400}"#).push?.dismissalDate == testNow.addingTimeInterval(14_400))
        let both = try patched(running, #"{"state":"ended","ended_ttl":300,"dismissal_ttl":0}"#)
        #expect(both.push?.dismissalDate == testNow)
        #expect(both.activity?.deleteAt == testNow.addingTimeInterval(300))
    }

    @Test func theStaleDateIsSentWhileOngoingAndTTLsPatchTriState() throws {
        let running = try #require(try patched(freshActivity(), #"{"state":"ongoing","stale_ttl":1800,"content":{"template":"generic"}}"#).activity)
        #expect(running.staleTTL == 1800)
        let update = try patched(running, #"{"content":{"progress":0.3}}"#, at: testNow.addingTimeInterval(100))
        #expect(update.push?.staleDate == testNow.addingTimeInterval(1_900))
        let cleared = try patched(running, #"{"stale_ttl":null}"#)
        #expect(cleared.activity?.staleTTL == nil)
        #expect(cleared.push?.staleDate == nil)
    }

    @Test func deleteEndsAnOngoingActivityAtOnceAndOnlyRemovesAnEndedOne() throws {
        let running = try ongoing("a")
        let deleted = try rules.apply(.delete, to: running, device: ActivityDeviceFacts(activityCount: 1), now: testNow)
        #expect(deleted.activity == nil)
        #expect(deleted.action == .deleted)
        #expect(deleted.push?.event == .end)
        #expect(try #require(deleted.push?.dismissalDate) < testNow, "a dismissal date in the past")
        #expect(deleted.pushedActivity == running, "the end push renders from the activity as it was")
        let ended = try #require(try patched(running, #"{"state":"ended"}"#).activity)
        #expect(try rules.apply(.delete, to: ended, device: ActivityDeviceFacts(activityCount: 1), now: testNow).push == nil)
    }

    @Test func snoozeMovesTheCountdownsEndDate() throws {
        let countdown = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"countdown","duration":600,"snooze_seconds":120}}"#).activity)
        let snoozed = try rules.apply(.snooze(seconds: nil), to: countdown, device: ActivityDeviceFacts(activityCount: 1), now: testNow)
        #expect(snoozed.activity?.content["end_date"] == .int(1_750_000_720))
        #expect(snoozed.activity?.content["snoozed_until"] == .int(1_750_000_720))
        #expect(snoozed.push?.event == .update)
        let late = try rules.apply(.snooze(seconds: 300), to: countdown, device: ActivityDeviceFacts(activityCount: 1), now: testNow.addingTimeInterval(700))
        #expect(late.activity?.content["end_date"] == .int(1_750_001_000), "from now once end_date has passed")
        let ended = try #require(try patched(countdown, #"{"state":"ended"}"#).activity)
        #expect(ended.content["snoozed_until"] == nil)
        #expect(throws: ActivityProblem.self) { _ = try rules.apply(.snooze(seconds: nil), to: ended, device: ActivityDeviceFacts(), now: testNow) }
        #expect(throws: ActivityProblem.self) { _ = try rules.apply(.snooze(seconds: 30), to: countdown, device: ActivityDeviceFacts(), now: testNow) }
    }

    @Test func endingClearsAlarmSnoozeAndWarningFlag() throws {
        var countdown = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","content":{"template":"countdown","duration":"10m","alarm":true,"warning_threshold":60}}"#)
                .activity)
        countdown.content["warning_pushed"] = true
        countdown.memory.countdownWarningSent = true
        let ended = try #require(try patched(countdown, #"{"state":"ended"}"#).activity)
        #expect(ended.content["alarm"] == nil)
        #expect(ended.content["warning_pushed"] == nil)
        #expect(!ended.memory.countdownWarningSent)
    }

    @Test func aClientCannotWriteServerOwnedMembers() throws {
        let outcome = try patched(
            freshActivity(),
            #"{"state":"ongoing","content":{"template":"countdown","duration":60,"warning_pushed":true,"snoozed_until":1,"log_backlog":[{"text":"x"}]}}"#)
        let content = try #require(outcome.activity?.content)
        #expect(content["warning_pushed"] == nil)
        #expect(content["snoozed_until"] == nil)
        #expect(content["log_backlog"] == nil)
    }
}
