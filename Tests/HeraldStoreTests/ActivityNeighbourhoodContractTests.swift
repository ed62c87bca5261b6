import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

private func record(_ device: Device, _ slug: String, state: String = "ongoing", extras: String? = nil) -> ActivityRecord {
    ActivityRecord(
        deviceID: device.id, slug: slug, state: state, priority: 3, createdAt: start, updatedAt: start,
        document: Data(#"{"slug":"\#(slug)"}"#.utf8), extras: extras.map { Data($0.utf8) }, version: 1, pushDueAt: start)
}

/// ``ActivityStore/changeActivity(deviceID:slug:_:)`` on every store (issue 37 §4): a change reads its activity, the
/// device's other ongoing ones without their extras, and a count; nothing else of the device.
@Suite("Activity store contract: one activity's change")
struct ActivityNeighbourhoodContractTests {
    @Test(arguments: Backend.available)
    func aChangeReadsItsActivityTheOtherOngoingOnesAndACount(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let rows = [
            record(device, "target", state: "ended", extras: #"{"log_backlog":[]}"#), record(device, "live-a", extras: #"{"x":1}"#),
            record(device, "live-b"), record(device, "done", state: "ended"), record(device, "gone", state: ActivityRecord.tombstoneState),
        ]
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: rows), ()) }
        let seen = try await store.changeActivity(deviceID: device.id, slug: "target") { neighbourhood in (ActivityWrites(), neighbourhood) }
        #expect(seen.record == rows[0])
        #expect(seen.record?.extras == Data(#"{"log_backlog":[]}"#.utf8))
        #expect(seen.otherOngoing.map(\.slug) == ["live-a", "live-b"])
        #expect(seen.otherOngoing.allSatisfy { $0.extras == nil && !$0.extrasRead })
        #expect(seen.activityCount == 4)  // the tombstone is not counted
        let missing = try await store.changeActivity(deviceID: device.id, slug: "new") { neighbourhood in (ActivityWrites(), neighbourhood) }
        #expect(missing.record == nil)
        #expect(missing.otherOngoing.count == 2)
        await #expect(throws: StoreError.notFound("device")) {
            try await store.changeActivity(deviceID: UUID(), slug: "target") { _ in (ActivityWrites(), ()) }
        }
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func anUpsertOfARecordReadWithoutExtrasKeepsThem(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        try await store.changeActivities(deviceID: device.id) { _ in
            (ActivityWrites(upserts: [record(device, "evicted", extras: #"{"kept":true}"#), record(device, "starting", state: "ended")]), ())
        }
        try await store.changeActivity(deviceID: device.id, slug: "starting") { neighbourhood in
            var evicted = try #require(neighbourhood.otherOngoing.first)
            evicted.state = "preempted"
            evicted.version += 1
            var starting = try #require(neighbourhood.record)
            starting.state = "ongoing"
            starting.extras = Data(#"{"new":true}"#.utf8)
            return (ActivityWrites(upserts: [evicted, starting]), ())
        }
        let evicted = try #require(try await store.activity(deviceID: device.id, slug: "evicted"))
        #expect(evicted.state == "preempted" && evicted.version == 2)
        #expect(evicted.extras == Data(#"{"kept":true}"#.utf8))
        #expect(try await store.activity(deviceID: device.id, slug: "starting")?.extras == Data(#"{"new":true}"#.utf8))
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aChangeThatThrowsWritesNothing(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.changeActivity(deviceID: device.id, slug: "a") { _ -> (ActivityWrites, Void) in throw Refused() }
        }
        #expect(try await store.activities(deviceID: device.id).isEmpty)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func concurrentChangesOfOneActivityLoseNoUpdate(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: [record(device, "counter")]), ()) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    // Half change the counter, half start others beside it: the counter's neighbourhood changes under it.
                    let slug = index.isMultiple(of: 2) ? "counter" : "other-\(index)"
                    try await store.changeActivity(deviceID: device.id, slug: slug) { neighbourhood in
                        var next = neighbourhood.record ?? record(device, slug)
                        next.version += 1
                        return (ActivityWrites(upserts: [next]), ())
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.activity(deviceID: device.id, slug: "counter")?.version == 11)
        #expect(try await store.activities(deviceID: device.id).count == 11)
        try await store.close()
    }
}
