import Foundation
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldActivities
@testable import HeraldCore
@testable import HeraldDelivery

/// The activity service and dispatcher on the in-memory store, with a fake provider and a test clock (issue 38).
@Suite("Activity service and dispatcher, unit")
struct ActivityDispatcherTests {
    typealias Harness = ActivityServiceHarness

    @Test func anOngoingActivityIsStartedOnThePushToStartTokenAndRemembersTheEvent() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.create("oven", name: "Oven", on: device)
            #expect(harness.wakes == 0, "an ended activity has nothing to push")
            let outcome = try await harness.patch("oven", #"{"state":"ongoing","content":{"template":"generic","state":"Baking"}}"#, on: device)
            #expect(outcome.push?.event == .start)
            #expect(harness.wakes == 1)
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 1)
            #expect(pushes[0].token == Harness.pushToStartToken)
            #expect(pushes[0].aps["event"] == "start")
            #expect(pushes[0].aps["timestamp"] == .int(1_763_812_800))
            #expect(pushes[0].aps["alert"] == ["title": "Oven", "body": "Baking"])
            #expect(pushes[0].aps["attributes"] == ["slug": "oven", "name": "Oven"])
            let record = try await harness.record("oven", of: device)
            #expect(record.pushedEvent == .start)
            #expect(record.pushedState == "ongoing")
            #expect(record.pushedTimestamp == 1_763_812_800)
            #expect(!record.hasUnpushedChange)
            #expect(record.lease == nil)
        }
    }

    @Test func updatesGoToTheUpdateTokenWithStrictlyIncreasingTimestampsAndAnEndEndsIt() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            await harness.dispatch()
            try await harness.patch("oven", #"{"state":"ended"}"#, on: device)
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 3)
            #expect(pushes.map { $0.aps["event"] } == ["start", "update", "end"])
            #expect(pushes[1].token == Harness.updateToken)
            #expect(pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.5))
            #expect(pushes.map { $0.aps["timestamp"] } == [.int(1_763_812_800), .int(1_763_812_801), .int(1_763_812_802)], "one second, three pushes")
            #expect(pushes[2].aps["dismissal-date"] != nil)
            let record = try await harness.record("oven", of: device)
            #expect(record.pushedEvent == .end)
            #expect(record.pushedState == "ended")
        }
    }

    @Test func changesBeforeAPassAreCoalescedIntoOnePushOfTheNewestState() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            for progress in ["0.2", "0.3", "0.4"] { try await harness.patch("oven", #"{"content":{"progress":\#(progress)}}"#, on: device) }
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 2)
            #expect(pushes[1].aps["event"] == "update")
            #expect(pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.4))
            #expect(try await harness.record("oven", of: device).version == 5)
        }
    }

    @Test func anUpdateWaitsForAnUpdateTokenThatArrivesLate() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: false)
            try await harness.patch("oven", #"{"content":{"progress":0.7}}"#, on: device)
            #expect(await harness.dispatch() == .done(nextDue: nil), "nothing due: it waits for the token")
            #expect(harness.pushes.count == 1)
            #expect(try await harness.record("oven", of: device).hasUnpushedChange)

            harness.clock.advance(by: 5)
            try await harness.service.setUpdateToken(Harness.updateToken, slug: "oven", of: device)
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 2)
            #expect(pushes[1].token == Harness.updateToken)
            #expect(pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.7))
        }
    }

    /// A claim of this instance's previous run, killed before it let go (the same instance id): a change named here
    /// waits for no lease then, since the dispatcher takes its own leases back when it starts (the crash-recovery
    /// test's token that was not followed by its update for 30 s).
    @Test func aLeaseLeftByAKilledRunOfThisInstanceIsTakenBackAtStart() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            try await harness.patch("oven", #"{"content":{"progress":0.7}}"#, on: device)
            let now = harness.clock.now()
            let left = try await harness.store.claimDueActivities(at: now, lease: Lease(owner: "herald-a", expiresAt: now + 30), limit: 8)
            #expect(left.map(\.slug) == ["oven"], "the killed run's claim")
            await harness.dispatch()
            #expect(harness.pushes.count == 1, "held by the lease: nothing pushed")

            await harness.dispatcher.releaseLeases("test")
            try await harness.patch("oven", #"{"content":{"progress":0.8}}"#, on: device)
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 2)
            #expect(pushes[1].aps["event"] == "update")
            #expect(pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.8))
            #expect(try await harness.record("oven", of: device).lease == nil)
        }
    }

    /// A push that expired in the outbox before it reached the device: the device shows what it showed before it (a
    /// start that never arrived: nothing), known from the stored event, and the newest state goes again as a start.
    @Test func aPushThatExpiredInTheOutboxIsFollowedByTheNewestStateForWhatTheDeviceShows() async throws {
        let harness = Harness(results: [.retry(reason: "503 Service Unavailable", after: nil)])
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: false)
            let pending = try await harness.record("oven", of: device)
            let inFlight = try #require(pending.inFlightNotification)
            #expect(pending.pushedEvent == .start)

            harness.clock.advance(by: 700)  // past the push's 600 s lifetime
            await harness.engine.scheduler.pass(now: harness.clock.now())
            #expect(await eventually { (try? await harness.engine.notification(id: inFlight)?.status) == .expired })
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 2)
            #expect(pushes[1].aps["event"] == "start", "the start never arrived: it goes again")
            #expect(pushes[1].token == Harness.pushToStartToken)
            #expect(try await harness.record("oven", of: device).inFlightNotification == nil)
        }
    }

    @Test func aDeadUpdateTokenEndsTheActivityWithoutAnotherPush() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            harness.provider.script(.deadToken(reason: "Unregistered"))
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            await harness.dispatch()
            let record = try await harness.record("oven", of: device)
            #expect(record.updateToken == nil)
            #expect(record.pushedState == nil)
            #expect(!record.hasUnpushedChange)
            #expect(try await harness.service.activity("oven", of: device).state == .ended)
            #expect(try await harness.store.device(id: device.id)?.isActive == true, "the device's own token is not dead")
            await harness.dispatch()
            #expect(harness.pushes.count == 2)
        }
    }

    /// The first attempt asked for a retry; the retry found the token dead. The dispatcher learns it from the engine's
    /// outcome (it went unnoticed before: the activity stayed ongoing, pushing to a dead token).
    @Test func aDeadTokenFoundOnARetryEndsTheActivityToo() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            harness.provider.script(.retry(reason: "503 Service Unavailable", after: nil), .deadToken(reason: "Unregistered"))
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            await harness.dispatch()
            #expect(try await harness.record("oven", of: device).inFlightNotification != nil)

            harness.clock.advance(by: 3)
            await harness.engine.scheduler.pass(now: harness.clock.now())
            #expect(await eventually { (try? await harness.record("oven", of: device).updateToken) == nil })
            let record = try await harness.record("oven", of: device)
            #expect(record.pushedState == nil)
            #expect(record.inFlightNotification == nil)
            #expect(try await harness.service.activity("oven", of: device).state == .ended)
            #expect(harness.settled == [ActivityKey(deviceID: device.id, slug: "oven")])
        }
    }

    /// The server-managed schedule: `stale_ttl` without an update ends the activity, from the store's due time.
    @Test func aStaleActivityIsEndedByTheServerWhenItsDueTimeComes() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.create("oven", name: "Oven", on: device, staleTTL: 60)
            try await harness.patch("oven", #"{"state":"ongoing","content":{"template":"generic","progress":0.1}}"#, on: device)
            await harness.dispatch()
            try await harness.service.setUpdateToken(Harness.updateToken, slug: "oven", of: device)
            guard case .done(let next?) = await harness.dispatch() else { Issue.record("no due time"); return }
            #expect(next > harness.clock.now(), "the stale end is due later")
            #expect(harness.dispatcher.sleep(after: .done(nextDue: next)) == .milliseconds(500), "sleeps at most the poll interval")

            harness.clock.set(next.addingTimeInterval(1))
            await harness.dispatch()
            let pushes = harness.pushes
            try #require(pushes.count == 2)
            #expect(pushes[1].aps["event"] == "end")
            #expect(try await harness.service.activity("oven", of: device).state == .ended)
        }
    }

    /// A change made on another instance names nothing here: this instance's claim finds it due and pushes it; a
    /// change named here while another claim holds the activity is left to that claim.
    @Test func aChangeMadeElsewhereIsClaimedAndAClaimedOneIsNotPushedTwice() async throws {
        let harness = Harness()
        let elsewhere = ActivityService(store: harness.store, clock: harness.clock, wake: { _ in })
        try await harness.running {
            let device = try await harness.device()
            try await harness.create("oven", name: "Oven", on: device)
            let patch = try ActivityRequest.patch(json: Array(#"{"state":"ongoing","content":{"template":"generic"}}"#.utf8))
            _ = try await elsewhere.change(.patch(slug: "oven", patch, upsert: false), slug: "oven", of: device)
            #expect(harness.dispatcher.woken.withLock { $0.isEmpty })
            await harness.dispatch()
            #expect(harness.pushes.map { $0.aps["event"] } == ["start"], "claimed and pushed")

            try await harness.service.setUpdateToken(Harness.updateToken, slug: "oven", of: device)
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            let now = harness.clock.now()
            let held = try await harness.store.claimDueActivities(
                at: now, lease: Lease(owner: "herald-b", expiresAt: now.addingTimeInterval(30)), limit: 8)
            #expect(held.map(\.slug) == ["oven"])
            await harness.dispatch()
            #expect(harness.pushes.count == 1, "herald-b holds it: its claim pushes it")
            #expect(try await harness.record("oven", of: device).lease?.owner == "herald-b")

            harness.clock.advance(by: 31)  // herald-b's claim expired: this instance claims it
            await harness.dispatch()
            #expect(harness.pushes.map { $0.aps["event"] } == ["start", "update"])
        }
    }

    /// An instance decided a push (its lease and `aps.timestamp` written) and was killed before it sent it: the
    /// activity is due again once that lease expires, and another instance claims it and sends the newest state.
    @Test func aPushDecidedByAnInstanceKilledBeforeItSentItIsClaimedOnceItsLeaseExpires() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            try await harness.patch("oven", #"{"content":{"progress":0.9}}"#, on: device)
            let killed = ActivityPushDecider(
                attributesType: LiveActivityPayload.defaultAttributesType, owner: "herald-b", leaseDuration: 30, pushLifetime: 600,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let now = harness.clock.now()
            let decided = try await harness.store.changeActivityRecord(deviceID: device.id, slug: "oven") { read in
                guard var record = read else { return (ActivityWrites(), false) }
                let push = killed.decide(&record, device: device, earlierPending: false, now: now)
                return (ActivityWrites(upserts: [record]), push != nil)
            }
            #expect(decided)
            await harness.dispatch()
            #expect(harness.pushes.count == 1, "herald-b's lease holds it")

            harness.clock.advance(by: 31)
            await harness.dispatch()
            #expect(harness.pushes.map { $0.aps["event"] } == ["start", "update"])
            #expect(harness.pushes.last?.aps["content-state"]?.objectValue?["progress"] == .double(0.9))
        }
    }

    @Test func theDispatcherSleepsUntilTheEarliestDueTimeAndNoLonger() {
        let harness = Harness()
        let now = harness.clock.now()
        let untilDue = harness.dispatcher.sleep(after: .done(nextDue: now.addingTimeInterval(0.2)))
        #expect(untilDue >= .milliseconds(200) && untilDue <= .milliseconds(201), "rounded up: never woken before it is due")
        #expect(harness.dispatcher.sleep(after: .done(nextDue: now.addingTimeInterval(-1))) == .zero)
        #expect(harness.dispatcher.sleep(after: .done(nextDue: nil)) == .milliseconds(500))
        #expect(harness.dispatcher.sleep(after: .more) == .milliseconds(500))
    }

    /// A store failure is answered 503 with the store's error as the problem's cause (logged with the answer).
    @Test func aStoreFailureKeepsItsCause() async throws {
        let harness = Harness()
        let unknown = Fixtures.device(at: harness.clock.now()).device  // never inserted: the store refuses the change
        await #expect {
            try await harness.create("oven", name: "Oven", on: unknown)
        } throws: { error in
            guard let problem = error as? ActivityProblem else { return false }
            return problem.status == 503 && problem.cause?.contains("device") == true
        }
    }
}
