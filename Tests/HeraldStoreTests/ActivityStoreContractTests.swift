import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

private func record(_ device: Device, _ slug: String, state: String = "ongoing", version: Int = 1) -> ActivityRecord {
    ActivityRecord(
        deviceID: device.id, slug: slug, state: state, priority: 3, createdAt: start, updatedAt: start,
        document: Data(#"{"slug":"\#(slug)"}"#.utf8), version: version, pushDueAt: start)
}

@Suite("Activity store contract")
struct ActivityStoreContractTests {
    @Test(arguments: Backend.available)
    func changesAreReadBackWithEveryColumn(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var full = record(device, "build")
        full.nextDueAt = start.addingTimeInterval(60)
        full.pushedVersion = 1
        full.pendingPush = Data("{}".utf8)
        full.pushedState = "ongoing"
        full.pushedTimestamp = 1_763_769_601
        full.pushedEvent = .update
        full.inFlightNotification = UUID()
        full.updateToken = Fixtures.apnsToken(9)
        full.lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(30))
        let written = full
        let answer = try await store.changeActivities(deviceID: device.id) { current in
            (ActivityWrites(upserts: [written, record(device, "alpha")]), current.count)
        }
        #expect(answer == 0)
        #expect(try await store.activity(deviceID: device.id, slug: "build") == full)
        #expect(try await store.activities(deviceID: device.id).map(\.slug) == ["alpha", "build"])
        #expect(try await store.nextActivityDue() == start)

        try await store.changeActivities(deviceID: device.id) { current in
            var changed = current[1]
            changed.version += 1
            changed.lease = nil
            return (ActivityWrites(upserts: [changed], deletions: ["alpha"]), ())
        }
        let after = try await store.activities(deviceID: device.id)
        #expect(after.map(\.slug) == ["build"])
        #expect(after.first?.version == 2)
        #expect(after.first?.lease == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aChangeThatThrowsWritesNothing(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.changeActivities(deviceID: device.id) { _ -> (ActivityWrites, Void) in throw Refused() }
        }
        #expect(try await store.activities(deviceID: device.id).isEmpty)
        await #expect(throws: StoreError.notFound("device")) {
            try await store.changeActivities(deviceID: UUID()) { _ in (ActivityWrites(), ()) }
        }
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func concurrentChangesOfOneDeviceLoseNoUpdate(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: [record(device, "counter")]), ()) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await store.changeActivities(deviceID: device.id) { current in
                        var next = current[0]
                        next.version += 1
                        return (ActivityWrites(upserts: [next]), ())
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.activity(deviceID: device.id, slug: "counter")?.version == 21)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func claimsTakeWhatIsDueAndNobodyHolds(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var later = record(device, "later")
        later.pushDueAt = nil
        later.nextDueAt = start.addingTimeInterval(10)
        var idle = record(device, "idle")
        idle.pushDueAt = nil
        let rows = [record(device, "now"), later, idle]
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: rows), ()) }

        let first = Lease(owner: "a", expiresAt: start.addingTimeInterval(30))
        #expect(try await store.claimDueActivities(at: start, lease: first, limit: 10).map(\.slug) == ["now"])
        #expect(try await store.activity(deviceID: device.id, slug: "now")?.lease == first)
        // Held: nobody else gets it until the lease expires.
        let second = Lease(owner: "b", expiresAt: start.addingTimeInterval(60))
        #expect(try await store.claimDueActivities(at: start.addingTimeInterval(5), lease: second, limit: 10).isEmpty)
        let claimed = try await store.claimDueActivities(at: start.addingTimeInterval(31), lease: second, limit: 10)
        #expect(claimed.map(\.slug) == ["now", "later"])
        #expect(claimed.allSatisfy { $0.lease == second })
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func deletingTheDeviceDeletesItsActivities(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        try await store.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: [record(device, "a")]), ()) }
        try await store.deleteDevice(id: device.id)
        #expect(try await store.activities(deviceID: device.id).isEmpty)
        #expect(try await store.nextActivityDue() == nil)
        try await store.close()
    }

    /// Two instances on one PostgreSQL database claim concurrently: every due activity is claimed exactly once.
    @Test
    func twoPostgresInstancesNeverClaimTheSameActivity() async throws {
        guard PostgresTestDatabase.url != nil else {
            #expect(!PostgresTestDatabase.isRequired, "HERALD_REQUIRE_POSTGRES=1 but HERALD_TEST_POSTGRES_URL is not set")
            return
        }
        let configuration = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresTestDatabase.openStore(configuration)
        let second = try await PostgresTestDatabase.openStore(configuration)
        let device = Fixtures.device().device
        try await first.insertDevice(device)
        let rows = (0..<40).map { record(device, "a\($0)") }
        try await first.changeActivities(deviceID: device.id) { _ in (ActivityWrites(upserts: rows), ()) }
        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
            for (store, owner) in [(first, "a"), (second, "b")] {
                group.addTask {
                    var slugs: [String] = []
                    for _ in 0..<8 {
                        let lease = Lease(owner: owner, expiresAt: Date(timeIntervalSince1970: 1_763_769_630))
                        slugs += try await store.claimDueActivities(at: Date(timeIntervalSince1970: 1_763_769_600), lease: lease, limit: 3).map(\.slug)
                    }
                    return slugs
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(claimed.count == 40)
        #expect(Set(claimed).count == 40)
        try await first.close()
        try await second.close()
    }
}
