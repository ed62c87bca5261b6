import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

/// Issue 39, section 4: the callback outbox and the tokens' outcome callback URLs, the same on every backend.
@Suite("Callback outbox contract")
struct CallbackContractTests {
    static func callback(for device: Device, at date: Date = start, url: String = "https://example.com/hook") -> CallbackDelivery {
        CallbackDelivery(
            deviceID: device.id, tokenID: UUID(), url: url, event: .acknowledged, body: Data(#"{"type":"notification.acknowledged"}"#.utf8),
            nextAttemptAt: date, createdAt: date)
    }

    @Test(arguments: Backend.available)
    func enqueuedCallbacksAreStoredAndGoWithTheirDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let callback = Self.callback(for: device)
        try await store.enqueueCallback(callback)
        #expect(try await store.callback(id: callback.id) == callback)
        #expect(try await store.callback(id: UUID()) == nil)
        // A device that does not exist takes no callback.
        await #expect(throws: StoreError.self) { try await store.enqueueCallback(Self.callback(for: Fixtures.device().device)) }
        try await store.deleteDevice(id: device.id)
        #expect(try await store.callback(id: callback.id) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func dueCallbacksAreClaimedOnceWithALeaseAndCompletedOnlyByItsHolder(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let first = Self.callback(for: device, at: start)
        let second = Self.callback(for: device, at: start.addingTimeInterval(5))
        let later = Self.callback(for: device, at: start.addingTimeInterval(60))
        for callback in [later, second, first] { try await store.enqueueCallback(callback) }
        let leaseA = Lease(owner: "a", expiresAt: start.addingTimeInterval(60))
        let leaseB = Lease(owner: "b", expiresAt: start.addingTimeInterval(60))
        // Earliest first, only what is due, at most `limit`.
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(10), lease: leaseA, limit: 1).map(\.id) == [first.id])
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(10), lease: leaseB, limit: 10).map(\.id) == [second.id])
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(10), lease: leaseB, limit: 10).isEmpty)
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(10), lease: leaseB, limit: 0).isEmpty)
        // Only the holder saves; saving releases the lease.
        let retried = first.applying(.retry(at: start.addingTimeInterval(40), countsAttempt: true), now: start.addingTimeInterval(10))
        #expect(try await !store.completeCallbackAttempt(retried, owner: "b"))
        #expect(try await store.completeCallbackAttempt(retried, owner: "a"))
        #expect(try await !store.completeCallbackAttempt(retried, owner: "a"))
        let saved = try #require(try await store.callback(id: first.id))
        #expect(saved.attempts == 1 && saved.status == .pending && saved.nextAttemptAt == start.addingTimeInterval(40))
        // Due again at its retry time; a crashed holder's lease expires and another instance takes it.
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(39), lease: leaseA, limit: 10).isEmpty)
        let retryLease = Lease(owner: "a", expiresAt: start.addingTimeInterval(100))
        #expect(
            try await store.claimDueCallbacks(at: start.addingTimeInterval(60), lease: retryLease, limit: 10).map(\.id)
                == [second.id, first.id, later.id])
        #expect(try await store.claimDueCallbacks(at: start.addingTimeInterval(100), lease: leaseB, limit: 10).count == 3)
        // A finished callback is never claimed again.
        let delivered = second.applying(.delivered, now: start.addingTimeInterval(101))
        #expect(try await store.completeCallbackAttempt(delivered, owner: "b"))
        let gone = first.applying(.gone, now: start.addingTimeInterval(101))
        #expect(try await store.completeCallbackAttempt(gone, owner: "b"))
        #expect(try await !store.completeCallbackAttempt(gone, owner: "b"))
        #expect(try await store.callback(id: second.id)?.status == .delivered)
        #expect(try await store.callback(id: first.id)?.lastError == "the receiver answered 410")
        #expect(try await store.claimDueCallbacks(at: .distantFuture, lease: Lease(owner: "c", expiresAt: .distantFuture), limit: 10).map(\.id) == [later.id])
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func finishedCallbacksAreDeletedAfterTheirTimeAndPendingOnesNever(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let pending = Self.callback(for: device, at: start.addingTimeInterval(-86_400 * 30))
        let done = Self.callback(for: device)
        let failed = Self.callback(for: device)
        for callback in [pending, done, failed] { try await store.enqueueCallback(callback) }
        let lease = Lease(owner: "a", expiresAt: start.addingTimeInterval(60))
        #expect(try await store.claimDueCallbacks(at: start, lease: lease, limit: 10).count == 3)
        #expect(try await store.completeCallbackAttempt(done.applying(.delivered, now: start.addingTimeInterval(1)), owner: "a"))
        #expect(try await store.completeCallbackAttempt(failed.applying(.failed(reason: "x"), now: start.addingTimeInterval(2)), owner: "a"))
        #expect(try await store.deleteFinishedCallbacks(before: start.addingTimeInterval(1), limit: 10) == 0)
        #expect(try await store.deleteFinishedCallbacks(before: .distantFuture, limit: 1) == 1)
        #expect(try await store.deleteFinishedCallbacks(before: .distantFuture, limit: 10) == 1)
        #expect(try await store.deleteFinishedCallbacks(before: .distantFuture, limit: 10) == 0)
        #expect(try await store.callback(id: pending.id)?.status == .pending)
        try await store.close()
    }

    @Test(arguments: Backend.available)
    func aTokensOutcomeCallbackURLIsSetReplacedClearedAndGoesWithItsDevice(_ backend: Backend) async throws {
        let store = try await backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = UUID()
        #expect(try await store.tokenCallbackURL(tokenID: token) == nil)
        try await store.setTokenCallbackURL("https://a.example/1", tokenID: token, deviceID: device.id, at: start)
        try await store.setTokenCallbackURL("https://a.example/2", tokenID: token, deviceID: device.id, at: start)
        #expect(try await store.tokenCallbackURL(tokenID: token) == "https://a.example/2")
        try await store.setTokenCallbackURL(nil, tokenID: token, deviceID: device.id, at: start)
        #expect(try await store.tokenCallbackURL(tokenID: token) == nil)
        await #expect(throws: StoreError.self) {
            try await store.setTokenCallbackURL("https://a.example/3", tokenID: UUID(), deviceID: UUID(), at: start)
        }
        try await store.setTokenCallbackURL("https://a.example/4", tokenID: token, deviceID: device.id, at: start)
        try await store.deleteDevice(id: device.id)
        #expect(try await store.tokenCallbackURL(tokenID: token) == nil)
        try await store.close()
    }
}
