import HeraldCore
import Synchronization
import Testing

@Suite("Batcher")
struct BatcherTests {
    private struct Refused: Error, Equatable {
        var entry: Int
    }

    private final class BatchLog: Sendable {
        let batches = Mutex<[[Int]]>([])
    }

    /// A batcher whose first batch waits for `release` once it has started, recording every batch it runs.
    private final class GatedBatcher: Sendable {
        let batcher: Batcher<Int, Int>
        let log = BatchLog()
        let firstStarted: AsyncStream<Void>
        private let releaseSink: AsyncStream<Void>.Continuation

        init(maximumBatch: Int) {
            let (firstStarted, startedSink) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseSink) = AsyncStream.makeStream(of: Void.self)
            self.firstStarted = firstStarted
            self.releaseSink = releaseSink
            let log = self.log
            batcher = Batcher(maximumBatch: maximumBatch) { entries in
                let isFirst = log.batches.withLock { batches in
                    batches.append(entries)
                    return batches.count == 1
                }
                if isFirst {
                    startedSink.yield()
                    for await _ in release { break }
                }
                return entries.map { $0 < 0 ? .failure(Refused(entry: $0)) : .success($0 * 10) }
            }
        }

        func release() { releaseSink.yield() }

        /// Waits until `count` entries wait for the next batch.
        func waitUntilWaiting(_ count: Int) async {
            while batcher.waiting < count { await Task.yield() }
        }
    }

    private func submitAll(_ entries: [Int], to gated: GatedBatcher) async -> [Int: Result<Int, Refused>] {
        await withTaskGroup(of: (Int, Result<Int, Refused>).self) { group in
            group.addTask {
                do { return (entries[0], .success(try await gated.batcher.submit(entries[0]))) } catch { return (entries[0], .failure(error as! Refused)) }
            }
            var started = gated.firstStarted.makeAsyncIterator()
            _ = await started.next()
            for entry in entries.dropFirst() {
                group.addTask {
                    do { return (entry, .success(try await gated.batcher.submit(entry))) } catch { return (entry, .failure(error as! Refused)) }
                }
            }
            await gated.waitUntilWaiting(entries.count - 1)
            gated.release()
            var answers: [Int: Result<Int, Refused>] = [:]
            for await (entry, answer) in group { answers[entry] = answer }
            return answers
        }
    }

    @Test func entriesSubmittedWhileABatchRunsGoTogetherIntoTheNextAndEachCallerGetsItsOwnAnswer() async {
        let gated = GatedBatcher(maximumBatch: 100)
        let entries = [1, 2, 3, 4, 5, -6, 7, 8, 9, 10, 11]
        let answers = await submitAll(entries, to: gated)
        let batches = gated.log.batches.withLock { $0 }
        #expect(batches.count == 2)
        #expect(batches.first == [1])
        #expect(batches.last.map(Set.init) == Set(entries.dropFirst()))
        for entry in entries {
            #expect(answers[entry] == (entry < 0 ? .failure(Refused(entry: entry)) : .success(entry * 10)))
        }
        #expect(gated.batcher.waiting == 0)
    }

    @Test func aBatchTakesAtMostTheMaximumAndTheRestFollow() async {
        let gated = GatedBatcher(maximumBatch: 4)
        let entries = Array(1...11)
        let answers = await submitAll(entries, to: gated)
        let batches = gated.log.batches.withLock { $0 }
        #expect(batches.map(\.count) == [1, 4, 4, 2])
        #expect(Set(batches.joined()) == Set(entries))
        #expect(answers.mapValues { try? $0.get() } == Dictionary(uniqueKeysWithValues: entries.map { ($0, $0 * 10) }))
    }

    /// `whenQueued` runs once the entry is queued, before its batch starts (the batch ahead of it still running):
    /// what the group commit relies on to answer a sender before its outcome is written.
    @Test func whenQueuedRunsBeforeTheEntrysBatchStarts() async throws {
        let gated = GatedBatcher(maximumBatch: 100)
        let first = Task { try await gated.batcher.submit(1) }
        var started = gated.firstStarted.makeAsyncIterator()
        _ = await started.next()
        let (queued, queuedSink) = AsyncStream.makeStream(of: Void.self)
        let second = Task { try await gated.batcher.submit(2, whenQueued: { queuedSink.yield() }) }
        var signals = queued.makeAsyncIterator()
        _ = await signals.next()
        #expect(gated.log.batches.withLock { $0 } == [[1]])
        #expect(gated.batcher.waiting == 1)
        gated.release()
        #expect(try await first.value == 10)
        #expect(try await second.value == 20)
        #expect(gated.log.batches.withLock { $0 } == [[1], [2]])
    }

    // MARK: Patience

    /// A batcher that records its batches, with patience that only company ends (the delay is an hour).
    private func patientBatcher(enoughEntries: Int = 100, maximumDelay: Duration = .seconds(3_600)) -> (Batcher<Int, Int>, BatchLog) {
        let log = BatchLog()
        let batcher = Batcher<Int, Int>(
            maximumBatch: 100, patience: BatchPatience(maximumDelay: maximumDelay, enoughEntries: enoughEntries)
        ) { entries in
            log.batches.withLock { $0.append(entries) }
            return entries.map { .success($0 * 10) }
        }
        return (batcher, log)
    }

    private func waitUntilHoldingBack(_ batcher: Batcher<Int, Int>) async {
        while !batcher.isHoldingBack { await Task.yield() }
    }

    @Test func entriesThatMayWaitHoldBackUntilOneThatCannotArrivesThenGoTogether() async throws {
        let (batcher, log) = patientBatcher()
        let first = Task { try await batcher.submit(1, mayWait: true) }
        await waitUntilHoldingBack(batcher)
        let second = Task { try await batcher.submit(2, mayWait: true) }
        while batcher.waiting < 1 { await Task.yield() }
        #expect(batcher.isHoldingBack)
        #expect(log.batches.withLock { $0 }.isEmpty)
        #expect(try await batcher.submit(3) == 30)
        #expect(try await first.value == 10)
        #expect(try await second.value == 20)
        #expect(log.batches.withLock { $0 } == [[1, 2, 3]])
        #expect(!batcher.isHoldingBack)
    }

    @Test func enoughEntriesThatMayWaitRunWithoutCompany() async throws {
        let (batcher, log) = patientBatcher(enoughEntries: 3)
        let first = Task { try await batcher.submit(1, mayWait: true) }
        await waitUntilHoldingBack(batcher)
        let second = Task { try await batcher.submit(2, mayWait: true) }
        while batcher.waiting < 1 { await Task.yield() }
        #expect(log.batches.withLock { $0 }.isEmpty)
        #expect(try await batcher.submit(4, mayWait: true) == 40)
        #expect(try await first.value == 10)
        #expect(try await second.value == 20)
        #expect(log.batches.withLock { $0 } == [[1, 2, 4]])
    }

    @Test func anEntryThatCannotWaitNeverHoldsBack() async throws {
        let (batcher, log) = patientBatcher()
        #expect(try await batcher.submit(5) == 50)
        #expect(log.batches.withLock { $0 } == [[5]])
    }

    @Test func aLoneEntryThatMayWaitRunsOnceTheDelayHasPassed() async throws {
        let (batcher, log) = patientBatcher(maximumDelay: .milliseconds(20))
        #expect(try await batcher.submit(6, mayWait: true) == 60)
        #expect(log.batches.withLock { $0 } == [[6]])
    }

    @Test func aCancelledLeaderStopsHoldingBack() async throws {
        let (batcher, log) = patientBatcher()
        let first = Task { try await batcher.submit(7, mayWait: true) }
        await waitUntilHoldingBack(batcher)
        first.cancel()
        #expect(try await first.value == 70)
        #expect(log.batches.withLock { $0 } == [[7]])
    }

    private struct TooLate: Error {}

    /// Issue 29, item 5: an entry still queued when its deadline passes is answered at once with the deadline's
    /// error and is never processed; one without a deadline waits for its batch.
    @Test func anEntryStillQueuedAtItsDeadlineIsWithdrawnAndNeverProcessed() async throws {
        let gated = GatedBatcher(maximumBatch: 8)
        let first = Task { try await gated.batcher.submit(1) }
        var started = gated.firstStarted.makeAsyncIterator()
        _ = await started.next()
        let patient = Task { try await gated.batcher.submit(3) }
        let begun = ContinuousClock.now
        await #expect(throws: TooLate.self) {
            _ = try await gated.batcher.submit(2, deadline: BatchDeadline(at: .now + .milliseconds(100), error: TooLate()))
        }
        // Withdrawn by its deadline, not sooner; the patient entry behind it is still waiting (no upper bound on time: a
        // busy machine may be late, and the withdrawal is proved by the answer arriving while the batch is held).
        #expect(ContinuousClock.now - begun >= .milliseconds(100))
        await gated.waitUntilWaiting(1)
        gated.release()
        #expect(try await first.value == 10)
        #expect(try await patient.value == 30)
        #expect(!gated.log.batches.withLock { $0 }.joined().contains(2))
    }
}
