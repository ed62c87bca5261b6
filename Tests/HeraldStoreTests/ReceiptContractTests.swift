import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// Issue 39, section 3: receipts of notifications that repeat until acknowledged, the same on every backend.
@Suite("Receipt contract")
struct ReceiptContractTests {
    static func receipt(for device: Device, token: UUID, collapse: String = "leak", given: Bool = true, tags: [String] = ["water"])
        -> Receipt
    {
        Receipt(
            deviceID: device.id, tokenID: token, collapseID: collapse, collapseIDGiven: given, tags: tags,
            content: Data(#"{"title":"Water"}"#.utf8), repeatSeconds: 60, expiresAt: start.addingTimeInterval(3_600),
            nextRepeatAt: start.addingTimeInterval(60), createdAt: start)
    }

    @Test(arguments: Backend.available)
    func storesReadsAndLimitsActiveReceiptsPerDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let first = Self.receipt(for: device, token: token, collapse: "a", tags: ["water", "basement"])
        #expect(try await store.insertReceipt(first, maximumActivePerDevice: 2))
        #expect(try await store.receipt(id: first.id) == first)
        let second = Self.receipt(for: device, token: token, collapse: "b", given: false, tags: [])
        #expect(try await store.insertReceipt(second, maximumActivePerDevice: 2))
        // A third is over the limit, unless it replaces one (same token, same given collapse id).
        #expect(try await !store.insertReceipt(Self.receipt(for: device, token: token, collapse: "c"), maximumActivePerDevice: 2))
        #expect(try await !store.insertReceipt(Self.receipt(for: device, token: UUID(), collapse: "a"), maximumActivePerDevice: 2))
        let replacing = Self.receipt(for: device, token: token, collapse: "a")
        #expect(try await store.insertReceipt(replacing, maximumActivePerDevice: 2))
        #expect(try await store.receipts(ids: [first.id, second.id, UUID()]).count == 2)
        #expect(try await store.activeReceipts(tokenID: token).count == 3)
        #expect(try await store.activeReceipts(tokenID: UUID()).isEmpty)
        // Ended: acknowledged once; a second ending changes nothing.
        let acknowledged = try #require(
            try await store.endReceipt(id: second.id, .acknowledged(actionID: "pw_ack", byDevice: device.id), at: start.addingTimeInterval(5)))
        #expect(acknowledged.status == .acknowledged && acknowledged.actionID == "pw_ack" && acknowledged.acknowledgedByDevice == device.id)
        #expect(acknowledged.endedAt == start.addingTimeInterval(5))
        #expect(try await store.endReceipt(id: second.id, .expired, at: start.addingTimeInterval(6)) == nil)
        #expect(try await store.receipt(id: second.id) == acknowledged)
        let canceled = try #require(try await store.endReceipt(id: replacing.id, .canceled(reason: "canceled_by_sender"), at: start))
        #expect(canceled.status == .canceled && canceled.cancelReason == "canceled_by_sender")
        try await store.deleteReceipt(id: replacing.id)
        #expect(try await store.receipt(id: replacing.id) == nil)
        // The device's removal takes its receipts.
        try await store.deleteDevice(id: device.id)
        #expect(try await store.receipt(id: first.id) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func activationRecordsTheNotificationAndReplacesTheTokensOlderReceiptWithTheSameCollapseID(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let older = Self.receipt(for: device, token: token)
        let otherToken = Self.receipt(for: device, token: UUID())
        let derived = Self.receipt(for: device, token: token, given: false)
        for receipt in [older, otherToken, derived] { #expect(try await store.insertReceipt(receipt, maximumActivePerDevice: 25)) }
        let notification = UUID()
        #expect(try await store.activateReceipt(id: older.id, notificationID: notification, at: start).isEmpty)
        #expect(try await store.receipt(id: older.id)?.notificationID == notification)
        let newer = Self.receipt(for: device, token: token)
        #expect(try await store.insertReceipt(newer, maximumActivePerDevice: 25))
        let replaced = try await store.activateReceipt(id: newer.id, notificationID: UUID(), at: start.addingTimeInterval(9))
        #expect(replaced.map(\.id) == [older.id])
        #expect(replaced.first?.status == .replaced && replaced.first?.endedAt == start.addingTimeInterval(9))
        #expect(try await store.receipt(id: otherToken.id)?.status == .active)
        #expect(try await store.receipt(id: derived.id)?.status == .active)
        #expect(try await store.receipt(id: newer.id)?.status == .active)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func dueRepeatsAreClaimedOnceWithALeaseAndSavedOnlyByItsHolder(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let receipt = Self.receipt(for: device, token: token)
        let unsent = Self.receipt(for: device, token: token, collapse: "never")
        for each in [receipt, unsent] { #expect(try await store.insertReceipt(each, maximumActivePerDevice: 25)) }
        _ = try await store.activateReceipt(id: receipt.id, notificationID: UUID(), at: start)
        let leaseA = Lease(owner: "a", expiresAt: start.addingTimeInterval(120))
        #expect(try await store.claimDueReceipts(at: start.addingTimeInterval(59), lease: leaseA, limit: 10).isEmpty)
        // Due at 60 s; the one never activated waits for its grace.
        let claimed = try await store.claimDueReceipts(at: start.addingTimeInterval(60), lease: leaseA, limit: 10)
        #expect(claimed.map(\.id) == [receipt.id])
        let leaseB = Lease(owner: "b", expiresAt: start.addingTimeInterval(300))
        #expect(try await store.claimDueReceipts(at: start.addingTimeInterval(61), lease: leaseB, limit: 10).isEmpty)
        var repeated = try #require(claimed.first)
        repeated.repeatsSent = 1
        repeated.nextRepeatAt = start.addingTimeInterval(121)
        #expect(try await !store.completeReceiptRepeat(repeated, owner: "b"))
        // a's lease expired (a crashed): b takes it and saves it; a's late save is ignored.
        #expect(try await store.claimDueReceipts(at: start.addingTimeInterval(120), lease: leaseB, limit: 10).map(\.id) == [receipt.id])
        #expect(try await store.completeReceiptRepeat(repeated, owner: "b"))
        #expect(try await !store.completeReceiptRepeat(repeated, owner: "a"))
        let saved = try #require(try await store.receipt(id: receipt.id))
        #expect(saved.repeatsSent == 1 && saved.nextRepeatAt == start.addingTimeInterval(121))
        // After the grace, the unsent one is claimed (to be canceled).
        let late = start.addingTimeInterval(ReceiptRules.unsentGrace)
        #expect(Set(try await store.claimDueReceipts(at: late, lease: leaseA, limit: 10).map(\.id)) == [receipt.id, unsent.id])
        // Ended while claimed: the holder's save is ignored.
        _ = try await store.endReceipt(id: receipt.id, .acknowledged(actionID: "ack", byDevice: device.id), at: late)
        #expect(try await !store.completeReceiptRepeat(repeated, owner: "a"))
        #expect(try await store.receipt(id: receipt.id)?.status == .acknowledged)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func retentionDeletesEndedReceiptsNeverActiveOnes(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let active = Self.receipt(for: device, token: token, collapse: "a")
        let ended = Self.receipt(for: device, token: token, collapse: "b")
        let endedLater = Self.receipt(for: device, token: token, collapse: "c")
        for each in [active, ended, endedLater] { #expect(try await store.insertReceipt(each, maximumActivePerDevice: 25)) }
        _ = try await store.endReceipt(id: ended.id, .expired, at: start.addingTimeInterval(10))
        _ = try await store.endReceipt(id: endedLater.id, .canceled(reason: "canceled_by_sender"), at: start.addingTimeInterval(20))
        #expect(try await store.deleteEndedReceipts(before: start.addingTimeInterval(15), limit: 10) == 1)
        #expect(try await store.receipt(id: ended.id) == nil)
        #expect(try await store.deleteEndedReceipts(before: .distantFuture, limit: 10) == 1)
        #expect(try await store.deleteEndedReceipts(before: .distantFuture, limit: 10) == 0)
        #expect(try await store.receipt(id: active.id)?.status == .active)
        try await store.close()
    }
}

/// The retention sweeper deletes a receipt 7 days after it ended (or after a shorter retention), never an active one.
@Suite("Receipts and the retention sweeper")
struct ReceiptRetentionSweeperTests {
    @Test(arguments: Backend.available)
    func aPassDeletesReceiptsSevenDaysAfterTheyEndedOrAfterAShorterRetention(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let clock = TestClock(start)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        let active = ReceiptContractTests.receipt(for: device, token: token, collapse: "a")
        let ended = ReceiptContractTests.receipt(for: device, token: token, collapse: "b")
        for each in [active, ended] { #expect(try await store.insertReceipt(each, maximumActivePerDevice: 25)) }
        _ = try await store.endReceipt(id: ended.id, .expired, at: start)
        let sweeper = RetentionSweeper(store: store, policy: RetentionPolicy(), clock: clock)
        clock.advance(by: 7 * 86_400 - 1)
        #expect(try await sweeper.sweep().receiptsDeleted == 0)
        clock.advance(by: 2)
        #expect(try await sweeper.sweep().receiptsDeleted == 1)
        #expect(try await store.receipt(id: ended.id) == nil)
        #expect(try await store.receipt(id: active.id)?.status == .active)
        // With a retention of a minute, an ended receipt goes a minute after its end.
        _ = try await store.endReceipt(id: active.id, .canceled(reason: "canceled_by_sender"), at: clock.now())
        let short = RetentionSweeper(store: store, policy: RetentionPolicy(retention: 60), clock: clock)
        #expect(try await short.sweep().receiptsDeleted == 0)
        clock.advance(by: 61)
        #expect(try await short.sweep().receiptsDeleted == 1)
        try await store.close()
    }
}

/// Several instances on one PostgreSQL database: each due repeat is claimed by one of them.
@Suite("Receipts on several instances")
struct ReceiptInstanceTests {
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func twoInstancesClaimingAtOnceTakeEachDueRepeatOnce() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))
        let second = try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))
        let token = UUID()
        var ids: Set<Receipt.ID> = []
        for _ in 0..<4 {
            let device = Fixtures.device().device
            try await first.insertDevice(device)
            for index in 0..<25 {
                let receipt = ReceiptContractTests.receipt(for: device, token: token, collapse: "c\(index)-\(device.id)")
                #expect(try await first.insertReceipt(receipt, maximumActivePerDevice: 25))
                _ = try await first.activateReceipt(id: receipt.id, notificationID: UUID(), at: start)
                ids.insert(receipt.id)
            }
        }
        let due = start.addingTimeInterval(60)
        let claimed = try await withThrowingTaskGroup(of: [Receipt.ID].self) { group in
            for (store, owner) in [(first, "a"), (second, "b")] {
                group.addTask {
                    var mine: [Receipt.ID] = []
                    while true {
                        let batch = try await store.claimDueReceipts(at: due, lease: Lease(owner: owner, expiresAt: due.addingTimeInterval(60)), limit: 7)
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
