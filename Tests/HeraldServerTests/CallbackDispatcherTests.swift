import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// Issue 39, section 4: the callback outbox's dispatcher with a fake transport: a crashed instance's callback is taken
/// over when its lease expires, and several instances on one PostgreSQL database make each attempt once.
@Suite("Callback dispatcher")
struct CallbackDispatcherTests {
    /// Answers every attempt with `status` (or never, when `hangs`), counting attempts by callback.
    final class CountingTransport: CallbackTransport {
        let status: Int
        let attempts = Mutex<[CallbackDelivery.ID: Int]>([:])

        init(status: Int = 204) { self.status = status }

        func attempt(_ callback: CallbackDelivery, secret: Data, now: Date) async -> CallbackAttemptAnswer {
            attempts.withLock { $0[callback.id, default: 0] += 1 }
            return .answered(status: status, retryAfter: nil)
        }

        func shutdown() async {}
        var total: Int { attempts.withLock { $0.values.reduce(0, +) } }
    }

    static func dispatcher(_ store: any HeraldStore, _ transport: CountingTransport, clock: TestClock, instance: String) -> CallbackDispatcher {
        CallbackDispatcher(
            store: store, transport: transport, clock: clock, instanceID: instance,
            configuration: CallbackConfiguration(pollInterval: .milliseconds(10)), logger: Logger(label: "test"))
    }

    /// A device with a token, and `count` callbacks due now signed with it.
    static func seed(_ store: any HeraldStore, count: Int, clock: TestClock) async throws -> [CallbackDelivery] {
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let token = APIToken(deviceID: device.id, name: "t", tokenHash: Secrets.hash("hrd_" + Secrets.random256BitHex()), createdAt: clock.now())
        #expect(try await store.insertAPIToken(token, maximumActive: 10) == .inserted)
        var callbacks: [CallbackDelivery] = []
        for index in 0..<count {
            let callback = try CallbackDelivery.make(
                event: .delivered, data: ["n": .int(index)], url: "https://hooks.example.com/\(index)", deviceID: device.id, tokenID: token.id,
                now: clock.now())
            try await store.enqueueCallback(callback)
            callbacks.append(callback)
        }
        return callbacks
    }

    @Test func aCallbackClaimedByAnInstanceThatDiedIsTakenOverWhenItsLeaseExpires() async throws {
        let clock = TestClock()
        let store = try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("h.sqlite").path)
        let callback = try #require(try await Self.seed(store, count: 1, clock: clock).first)
        let crashed = Self.dispatcher(store, CountingTransport(), clock: clock, instance: "a")
        let survivor = CountingTransport()
        let other = Self.dispatcher(store, survivor, clock: clock, instance: "b")
        // Instance a claims it and dies before its attempt (kill -9): nobody else takes it while the lease holds.
        #expect(await crashed.pass().map(\.id) == [callback.id])
        #expect(await other.pass().isEmpty)
        clock.advance(by: CallbackDispatcher.leaseDuration - 1)
        #expect(await other.pass().isEmpty)
        clock.advance(by: 1)
        let taken = await other.pass()
        #expect(taken.map(\.id) == [callback.id])
        for claimed in taken { await other.attempt(claimed) }
        let stored = try #require(try await store.callback(id: callback.id))
        #expect(stored.status == .delivered && stored.attempts == 1)
        #expect(survivor.total == 1)
        #expect(other.attemptsInFlight == 0)
        // The dead instance's late save changes nothing.
        #expect(try await !store.completeCallbackAttempt(callback.applying(.gone, now: clock.now()), owner: "a"))
        try await store.close()
    }

    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func severalInstancesOnPostgreSQLMakeEachAttemptOnce() async throws {
        let url = try await HeraldCluster.freshDatabase(serverURL: try #require(HeraldCluster.postgresURL))
        let clock = TestClock()
        // The startup deadline of the store tests (a loaded full run missed the default 30 s).
        let configuration = try PostgresURL(url).clientConfiguration
        var stores: [any HeraldStore] = []
        for _ in 0..<3 { stores.append(try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))) }
        let callbacks = try await Self.seed(stores[0], count: 300, clock: clock)
        let transports = stores.map { _ in CountingTransport() }
        let dispatchers = stores.indices.map { Self.dispatcher(stores[$0], transports[$0], clock: clock, instance: "instance-\($0)") }
        let tasks = dispatchers.map { dispatcher in Task { try await dispatcher.run() } }
        #expect(await eventually { transports.map(\.total).reduce(0, +) >= callbacks.count })
        let delivered = try await eventually(attempts: 400) {
            var count = 0
            for callback in callbacks where try await stores[0].callback(id: callback.id)?.status == .delivered { count += 1 }
            return count == callbacks.count
        }
        #expect(delivered)
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        var attempts: [CallbackDelivery.ID: Int] = [:]
        for transport in transports { attempts.merge(transport.attempts.withLock { $0 }, uniquingKeysWith: +) }
        #expect(attempts.count == callbacks.count)
        #expect(attempts.values.allSatisfy { $0 == 1 })
        for store in stores { try await store.close() }
    }

    @Test func theMostInFlightBoundsWhatAPassClaims() async throws {
        let clock = TestClock()
        let store = InMemoryStore()
        _ = try await Self.seed(store, count: 70, clock: clock)
        let dispatcher = Self.dispatcher(store, CountingTransport(), clock: clock, instance: "a")
        #expect(await dispatcher.pass().count == 64)
        #expect(dispatcher.attemptsInFlight == 64)
        #expect(await dispatcher.pass().isEmpty)
    }
}
