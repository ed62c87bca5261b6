import Foundation
import HeraldActivities
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// The long polls of approval cards without HTTP: a waiter parks while the card is unanswered, wakes once it is
/// settled, and answers at once at graceful shutdown.
@Suite("Approval waiters")
struct ApprovalWaiterTests {
    /// A store with one device and its ongoing, unanswered approval card `deploy`.
    private func storeWithCard() async throws -> (InMemoryStore, ActivityKey) {
        let store = InMemoryStore()
        let (device, _, _) = Fixtures.device()
        try await store.insertDevice(device)
        let body = #"{"state":"ongoing","content":{"template":"approval","state":"Ship?","options":[{"id":"yes","title":"Yes"},{"id":"no","title":"No"}]}}"#
        let patch = try ActivityRequest.patch(json: Array(body.utf8))
        let outcome = try ActivityRules().apply(.patch(slug: "deploy", patch, upsert: true), to: nil, device: ActivityDeviceFacts(), now: Date())
        let card = try #require(outcome.activity)
        let record = try ActivityRecord.new(card, deviceID: device.id).recording(card, push: nil, now: Date())
        try await store.changeActivity(deviceID: device.id, slug: "deploy") { _ in (ActivityWrites(upserts: [record]), ()) }
        return (store, ActivityKey(deviceID: device.id, slug: "deploy"))
    }

    @Test func aWaiterParksUntilTheCardIsAnswered() async throws {
        let (store, key) = try await storeWithCard()
        let waiters = ApprovalWaiters(store: store)
        #expect(try await waiters.wait(for: key, upTo: .zero) == nil)
        async let waited = waiters.wait(for: key, upTo: .seconds(600))
        #expect(await eventually { waiters.count == 1 })
        try await store.changeActivity(deviceID: key.deviceID, slug: key.slug) { neighbourhood in
            let record = try #require(neighbourhood.record)
            let answered = try ApprovalRules.answer(try record.decodedActivity(), option: "no", now: Date())
            return (ActivityWrites(upserts: [try record.recording(answered, push: nil, now: Date())]), ())
        }
        waiters.answered(key)
        #expect(try await waited == true)
        #expect(waiters.count == 0)
        // Settled now: a new wait answers at once.
        #expect(try await waiters.wait(for: key, upTo: .seconds(600)) == true)
    }

    private struct Waiting: Service {
        let waiters: ApprovalWaiters
        let key: ActivityKey
        let result: AsyncStream<Bool?>.Continuation

        func run() async throws {
            result.yield(try await waiters.wait(for: key, upTo: .seconds(600)))
            result.finish()
            try? await gracefulShutdown()
        }
    }

    @Test(.timeLimit(.minutes(1))) func aHeldPollAnswersAtOnceAtShutdown() async throws {
        let (store, key) = try await storeWithCard()
        let waiters = ApprovalWaiters(store: store)
        let (results, continuation) = AsyncStream.makeStream(of: Bool?.self)
        let group = ServiceGroup(
            configuration: .init(services: [Waiting(waiters: waiters, key: key, result: continuation)], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await eventually { waiters.count == 1 })
            await group.triggerGracefulShutdown()
            var iterator = results.makeAsyncIterator()
            let settled = await iterator.next()
            #expect(settled == .some(nil))  // answered at once, still unanswered
            try await tasks.waitForAll()
        }
        #expect(waiters.count == 0)
    }
}
