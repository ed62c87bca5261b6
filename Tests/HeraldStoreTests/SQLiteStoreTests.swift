import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)
private let today = UTCDay(containing: start).description

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test func usesWALAndKeepsEverythingAcrossReopening() async throws {
        let path = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        #expect(try await store.journalMode() == "wal")
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: 5))
        try await store.close()

        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.device(id: device.id) == device)
        #expect(try await reopened.notification(id: notification.id) == notification)
        #expect(try await reopened.quotaCounters(deviceID: device.id, day: today).successful == 1)
        try await reopened.close()
    }
}
