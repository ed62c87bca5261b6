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
/// run on two cores hung with 255 dispatch threads waiting for readers.
@Suite("SQLite store: closing")
struct SQLiteStoreCloseTests {
    @Test("More stores than cores, closed at once while they are read, all close and the process goes on")
    func storesClosedAtOnceWhileReadDoNotStopTheProcess() async throws {
        // A deadlocked cooperative pool stops Swift Testing's own time limit too: a thread of its own ends the process.
        final class Flag: Sendable { let isSet = Atomic(false) }
        let finished = Flag()
        let watchdog = Thread {
            for _ in 0..<600 {
                if finished.isSet.load(ordering: .relaxed) { return }
                Thread.sleep(forTimeInterval: 1)
            }
            FileHandle.standardError.write(Data("SQLiteStoreCloseTests: stores closing while read stopped the process\n".utf8))
            abort()
        }
        watchdog.start()
        defer { finished.isSet.store(true, ordering: .relaxed) }

        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        var stores: [SQLiteStore] = []
        for _ in 0..<count {
            stores.append(try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path))
        }
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
}
