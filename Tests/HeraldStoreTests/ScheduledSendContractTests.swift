import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// Issue 39, section 5: scheduled sends, the same on every backend.
@Suite("Scheduled send contract")
struct ScheduledSendContractTests {
    static func send(for device: Device, token: UUID, at date: Date, recurrence: ScheduledSend.Recurrence? = nil) -> ScheduledSend {
        ScheduledSend(
            deviceID: device.id, tokenID: token, notification: Data(#"{"title":"Hi","body":"There"}"#.utf8),
            sendAt: recurrence == nil ? date : nil, recurrence: recurrence, nextAt: date, createdAt: start)
    }

    @Test(arguments: Backend.available)
    func storesListsAndLimitsPendingSendsPerDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let recurring = Self.send(
            for: device, token: token, at: start.addingTimeInterval(60),
            recurrence: .init(cron: "0 7 * * 1-5", timeZone: "Europe/Berlin", until: start.addingTimeInterval(86_400 * 30), count: 10))
        #expect(try await store.insertScheduledSend(recurring, maximumPending: 2))
        #expect(try await store.scheduledSend(id: recurring.id) == recurring)
        let once = Self.send(for: device, token: token, at: start.addingTimeInterval(120))
        #expect(try await store.insertScheduledSend(once, maximumPending: 2))
        #expect(try await !store.insertScheduledSend(Self.send(for: device, token: token, at: start), maximumPending: 2))
        #expect(try await store.scheduledSends(tokenID: token, limit: 10).count == 2)
        #expect(try await store.scheduledSends(tokenID: UUID(), limit: 10).isEmpty)
        // A canceled send no longer counts against the limit.
        let canceled = try #require(try await store.cancelScheduledSend(id: once.id, at: start.addingTimeInterval(5)))
        #expect(canceled.status == .canceled && canceled.canceledAt == start.addingTimeInterval(5) && canceled.nextAt == nil)
        #expect(try await store.insertScheduledSend(Self.send(for: device, token: token, at: start), maximumPending: 2))
        try await store.deleteScheduledSend(id: once.id)
        #expect(try await store.scheduledSend(id: once.id) == nil)
        #expect(try await store.cancelScheduledSend(id: once.id, at: start) == nil)
        try await store.deleteDevice(id: device.id)
        #expect(try await store.scheduledSend(id: recurring.id) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func retentionDeletesFinishedSendsAndCanceledOnesAfterADayButNeverScheduledOnes(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let scheduled = Self.send(for: device, token: token, at: start.addingTimeInterval(-86_400 * 400))
        let sent = Self.send(for: device, token: token, at: start)
        let canceled = Self.send(for: device, token: token, at: start.addingTimeInterval(3_600))
        for send in [scheduled, sent, canceled] { #expect(try await store.insertScheduledSend(send, maximumPending: 25)) }
        _ = try await store.claimDueScheduledSends(at: start, lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(60)), limit: 1)
        var done = try #require(try await store.scheduledSend(id: scheduled.id))
        #expect(done.id == scheduled.id)
        // The oldest (claimed) one stays scheduled; `sent` is completed as sent.
        _ = try await store.claimDueScheduledSends(at: start, lease: Lease(owner: "a", expiresAt: start.addingTimeInterval(60)), limit: 5)
        done = sent
        done.status = .sent
        done.nextAt = nil
        done.updatedAt = start.addingTimeInterval(10)
        #expect(try await store.completeScheduledSend(done, owner: "a"))
        _ = try await store.cancelScheduledSend(id: canceled.id, at: start.addingTimeInterval(20))
        #expect(try await store.deleteFinishedScheduledSends(finishedBefore: start.addingTimeInterval(15), canceledBefore: start, limit: 10) == 1)
        #expect(try await store.scheduledSend(id: sent.id) == nil)
        #expect(try await store.deleteFinishedScheduledSends(finishedBefore: start, canceledBefore: start.addingTimeInterval(21), limit: 10) == 1)
        #expect(try await store.scheduledSend(id: canceled.id) == nil)
        #expect(try await store.deleteFinishedScheduledSends(finishedBefore: .distantFuture, canceledBefore: .distantFuture, limit: 10) == 0)
        #expect(try await store.scheduledSend(id: scheduled.id)?.status == .scheduled)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func dueSendsAreClaimedOnceWithALeaseAndCompletedOnlyByItsHolder(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let due = Self.send(for: device, token: token, at: start)
        let later = Self.send(for: device, token: token, at: start.addingTimeInterval(600))
        for send in [due, later] { #expect(try await store.insertScheduledSend(send, maximumPending: 25)) }
        let leaseA = Lease(owner: "a", expiresAt: start.addingTimeInterval(60))
        #expect(try await store.claimDueScheduledSends(at: start, lease: leaseA, limit: 10).map(\.id) == [due.id])
        // Held by a: b gets nothing until the lease expires.
        let leaseB = Lease(owner: "b", expiresAt: start.addingTimeInterval(120))
        #expect(try await store.claimDueScheduledSends(at: start.addingTimeInterval(1), lease: leaseB, limit: 10).isEmpty)
        var sent = due
        sent.status = .sent
        sent.sentCount = 1
        sent.nextAt = nil
        sent.lastNotificationID = UUID()
        sent.updatedAt = start.addingTimeInterval(2)
        #expect(try await !store.completeScheduledSend(sent, owner: "b"))
        // a's lease expired (a crashed): b takes it over and completes it; a's late completion is ignored.
        #expect(try await store.claimDueScheduledSends(at: start.addingTimeInterval(61), lease: leaseB, limit: 10).map(\.id) == [due.id])
        #expect(try await store.completeScheduledSend(sent, owner: "b"))
        #expect(try await !store.completeScheduledSend(sent, owner: "a"))
        #expect(try await store.scheduledSend(id: due.id) == sent)
        #expect(try await store.claimDueScheduledSends(at: start.addingTimeInterval(599), lease: leaseA, limit: 10).isEmpty)
        // Canceled while being sent: it stays canceled.
        let claimed = try await store.claimDueScheduledSends(at: start.addingTimeInterval(600), lease: leaseA, limit: 10)
        #expect(claimed.map(\.id) == [later.id])
        _ = try await store.cancelScheduledSend(id: later.id, at: start.addingTimeInterval(601))
        var laterSent = later
        laterSent.status = .sent
        #expect(try await !store.completeScheduledSend(laterSent, owner: "a"))
        #expect(try await store.scheduledSend(id: later.id)?.status == .canceled)
        try await store.close()
    }
}

/// Several instances on one PostgreSQL database: each due send is claimed by one of them.
@Suite("Scheduled sends on several instances")
struct ScheduledSendInstanceTests {
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func twoInstancesClaimingAtOnceTakeEachDueSendOnce() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))
        let second = try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))
        let token = UUID()
        var ids: Set<ScheduledSend.ID> = []
        for _ in 0..<4 {
            let device = Fixtures.device().device
            try await first.insertDevice(device)
            for _ in 0..<25 {
                let send = ScheduledSendContractTests.send(for: device, token: token, at: start)
                #expect(try await first.insertScheduledSend(send, maximumPending: 25))
                ids.insert(send.id)
            }
        }
        // Each instance claims in batches of 7 until nothing is left; they run at the same time.
        let claimed = try await withThrowingTaskGroup(of: [ScheduledSend.ID].self) { group in
            for (store, owner) in [(first, "a"), (second, "b")] {
                group.addTask {
                    var mine: [ScheduledSend.ID] = []
                    while true {
                        let batch = try await store.claimDueScheduledSends(
                            at: start, lease: Lease(owner: owner, expiresAt: start.addingTimeInterval(60)), limit: 7)
                        if batch.isEmpty { return mine }
                        mine += batch.map(\.id)
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(claimed.count == 100)
        #expect(Set(claimed) == ids)
        try await first.close()
        try await second.close()
    }
}
