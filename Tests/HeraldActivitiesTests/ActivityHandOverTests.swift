import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldActivities
@testable import HeraldDelivery

/// A change that decides its activity's push in its own write and hands it to the dispatcher (``ActivityHandOver``).
@Suite("Activity pushes handed over by the change, unit")
struct ActivityHandOverTests {
    typealias Harness = ActivityServiceHarness

    @Test func aChangeDecidesItsPushInItsOwnWriteAndTheDispatcherSendsIt() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            let wakes = harness.wakes
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            let decided = try await harness.record("oven", of: device)
            #expect(decided.lease?.owner == "herald-a")
            #expect(decided.pushedTimestamp != nil)
            #expect(decided.pushDueAt == decided.lease?.expiresAt, "due again should the push be lost with its instance")
            #expect(harness.wakes == wakes, "nothing named: the push is handed over")

            await harness.dispatch()
            #expect(harness.pushes.map { $0.aps["event"] } == ["start", "update"])
            #expect(harness.pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.5))
            let written = try await harness.record("oven", of: device)
            #expect(written.lease == nil)
            #expect(written.pushedVersion == written.version)
            #expect(!written.hasUnpushedChange)
        }
    }

    /// While the dispatcher sends a push, a change decides nothing: the push's outcome finds the newer changes and they
    /// go as one push of the newest state after it.
    @Test func changesMadeWhileAPushIsSentFollowItAsOnePushOfTheNewestState() async throws {
        let harness = Harness()
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            harness.provider.hold()
            try await harness.patch("oven", #"{"content":{"progress":0.5}}"#, on: device)
            let sending = Task { await harness.dispatch() }
            while harness.provider.heldCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
            for progress in ["0.6", "0.7"] { try await harness.patch("oven", #"{"content":{"progress":\#(progress)}}"#, on: device) }
            #expect(try await harness.record("oven", of: device).lease?.owner == "herald-a", "the lease of the push being sent")
            harness.provider.release()
            _ = await sending.value
            await harness.dispatch()
            let progress = harness.pushes.map { $0.aps["content-state"]?.objectValue?["progress"] }
            #expect(progress == [.double(0.1), .double(0.5), .double(0.7)])
            #expect(try await !harness.record("oven", of: device).hasUnpushedChange)
        }
    }

    /// The instance that decided a push was killed before it sent it: the push's lease expires, the activity is due
    /// then, and another instance claims it and sends the newest state.
    @Test func aPushLostWithTheInstanceThatDecidedItIsClaimedOnceItsLeaseExpires() async throws {
        let harness = Harness()
        let killed = ActivityDispatcher(
            store: harness.store, pipeline: harness.pipeline, clock: harness.clock, instanceID: "herald-b",
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let elsewhere = ActivityService(store: harness.store, clock: harness.clock, handOver: killed.handOver, wake: { _ in })
        try await harness.running {
            let device = try await harness.device()
            try await harness.startOven(on: device, reportingToken: true)
            let update = try ActivityRequest.patch(json: Array(#"{"content":{"progress":0.9}}"#.utf8))
            _ = try await elsewhere.change(.patch(slug: "oven", update, upsert: false), slug: "oven", of: device)
            #expect(try await harness.record("oven", of: device).lease?.owner == "herald-b")
            await harness.dispatch()
            #expect(harness.pushes.count == 1, "herald-b's lease holds it")

            harness.clock.advance(by: 31)
            await harness.dispatch()
            #expect(harness.pushes.map { $0.aps["event"] } == ["start", "update"])
            #expect(harness.pushes[1].aps["content-state"]?.objectValue?["progress"] == .double(0.9))
        }
    }
}
