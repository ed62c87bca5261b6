import Foundation
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

import HeraldStore

/// `DatabasePool.close()` blocks its thread until every reader is back, and a reader comes back when the task holding
/// it goes on, on a thread of Swift's cooperative pool (as many as the machine has cores). When `SQLiteStore.close()`
/// blocked that pool's threads, stores closing at once while they were read stopped the whole process: a full test
/// run on two cores hung with 255 dispatch threads waiting for readers. And GRDB waits for a free reader by blocking a
/// dispatch thread, one per pool: hundreds of busy stores in one process (a test run) used up all 255 (``ReaderGate``).
@Suite("SQLite store: threads", .serialized)
struct SQLiteStoreThreadTests {
    @Test("More stores than cores, closed at once while they are read, all close and the process goes on")
    func storesClosedAtOnceWhileReadDoNotStopTheProcess() async throws {
        let watchdog = Watchdog("stores closing while read stopped the process")
        defer { watchdog.finish() }

        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let stores = try await Self.openStores(count)
        let closed = await withTaskGroup(of: Bool.self) { group in
            for store in stores {
                for _ in 0..<40 {
                    group.addTask {
                        _ = try? await store.recentNotifications(deviceID: nil, limit: 1)
                        return false
                    }
                }
                group.addTask { (try? await store.close()) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(closed == count)
    }

    @Test("Hundreds of stores, each read by more tasks than it has readers, at once: every read is answered")
    func manyStoresReadBeyondTheirReadersDoNotStopTheProcess() async throws {
        let watchdog = Watchdog("reads of many stores at once stopped the process (dispatch threads waiting for readers)")
        defer { watchdog.finish() }
        let stores = try await Self.openStores(300)
        let answered = await withTaskGroup(of: Bool.self) { group in
            for store in stores {
                for _ in 0..<8 {
                    group.addTask { (try? await store.recentNotifications(deviceID: nil, limit: 1)) != nil }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answered == 300 * 8)
        for store in stores { try await store.close() }
    }

    /// Opens `count` stores (each a file of its own, migrated) on a thread of its own. Opening one blocks its thread
    /// while the schema is made; 300 of them on Swift's cooperative pool, two threads on two cores, held every other
    /// test's server in the process for more than 20 s in a full run (their clients gave up: `readTimeout`).
    static func openStores(_ count: Int) async throws -> [SQLiteStore] {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try (0..<count).map { _ in try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path) }
                    })
            }.start()
        }
    }
}

/// A deadlocked cooperative pool or dispatch pool stops Swift Testing's own time limit too: a thread of its own ends
/// the process (a failure, not a hang) if the test has not finished within ten minutes.
private final class Watchdog: Sendable {
    private let finished = Atomic(false)

    init(_ failure: String) {
        let thread = Thread { [self] in
            for _ in 0..<600 {
                if finished.load(ordering: .relaxed) { return }
                Thread.sleep(forTimeInterval: 1)
            }
            FileHandle.standardError.write(Data("SQLiteStoreThreadTests: \(failure)\n".utf8))
            abort()
        }
        thread.start()
    }

    func finish() { finished.store(true, ordering: .relaxed) }
}
