import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

private struct Refused: Error, Equatable {}

/// ``ActivityStore/changeActivityRecord(deviceID:slug:decideInWriter:_:)`` on every store (issue 38): a change of one
/// activity's row alone, decided outside the writer or inside it. On SQLite concurrent changes share a write
/// transaction (a batch), each in a savepoint of its own: one that throws leaves the others written.
@Suite("Activity store contract: one activity's row changed")
struct ActivityRecordChangeContractTests {
    @Test(arguments: Backend.available, [false, true])
    func concurrentChangesOfOneRowLoseNoUpdateAndOneThatThrowsWritesNothing(_ backend: Backend, inWriter: Bool) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let first = ActivityRecord(
            deviceID: device.id, slug: "counter", state: "ongoing", priority: 3, createdAt: start, updatedAt: start,
            document: Data(#"{"slug":"counter"}"#.utf8), extras: Data("{}".utf8), version: 0, pushDueAt: start)
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: [first]), ()) }
        let refusals = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        try await store.changeActivityRecord(deviceID: device.id, slug: "counter", decideInWriter: inWriter) { read in
                            guard var next = read else { return (ActivityWrites(), ()) }
                            if index == 7 { throw Refused() }
                            next.version += 1
                            // Another activity's row in the writes is never written by a change of this one.
                            var other = next
                            other.slug = "other-\(index)"
                            return (ActivityWrites(upserts: [next, other]), ())
                        }
                        return false
                    } catch is Refused {
                        return true
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(refusals == 1)
        #expect(try await store.activity(deviceID: device.id, slug: "counter")?.version == 19)
        #expect(try await store.activities(deviceID: device.id).map(\.slug) == ["counter"])
        try await store.close()
    }

    /// `releaseActivityLeases(owner:)`: the dispatcher's start (a killed run's leases) and graceful stop give back the
    /// owner's activity leases, and only the owner's.
    @Test(arguments: Backend.available)
    func releasingAnOwnersLeasesLeavesOtherOwnersLeases(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let rows = ["a", "b"].map { slug in
            ActivityRecord(
                deviceID: device.id, slug: slug, state: "ongoing", priority: 3, createdAt: start, updatedAt: start,
                document: Data(#"{"slug":"\#(slug)"}"#.utf8), version: 1, pushDueAt: start)
        }
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: rows), ()) }
        let expiry = start.addingTimeInterval(30)
        #expect(try await store.claimDueActivities(at: start, lease: Lease(owner: "herald-a", expiresAt: expiry), limit: 1).count == 1)
        #expect(try await store.claimDueActivities(at: start, lease: Lease(owner: "herald-b", expiresAt: expiry), limit: 1).count == 1)
        try await store.releaseActivityLeases(owner: "herald-a")
        let owners = try await store.activities(deviceID: device.id).map { $0.lease?.owner }
        #expect(owners.compactMap { $0 } == ["herald-b"], "\(owners)")
        #expect(owners.count == 2)
        try await store.close()
    }
}
