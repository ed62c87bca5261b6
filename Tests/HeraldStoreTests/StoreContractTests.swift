import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The contract every `HeraldStore` implementation keeps. Each test runs against every backend.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case inMemory
    case sqlite

    var testDescription: String { rawValue }

    func makeStore() throws -> any HeraldStore {
        switch self {
        case .inMemory: InMemoryStore()
        case .sqlite: try SQLiteStore(path: TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path)
        }
    }
}

private let start = Date(timeIntervalSince1970: 1_763_769_600)
private let today = UTCDay(containing: start).description

@Suite("Store contract")
struct StoreContractTests {
    @Test(arguments: Backend.allCases)
    func findsDevicesByUserIDHashAndID(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let (device, userID, _) = Fixtures.device()
        try await store.insertDevice(device)
        #expect(try await store.device(userIDHash: Secrets.hash(userID)) == device)
        #expect(try await store.device(id: device.id) == device)
        #expect(try await store.device(userIDHash: Secrets.hash(Secrets.random256BitHex())) == nil)
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aTokenRegisteredAgainMovesToTheNewDevice(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let first = Fixtures.device(token: Fixtures.apnsToken(7)).device
        let second = Fixtures.device(token: Fixtures.apnsToken(7)).device
        try await store.insertDevice(first)
        try await store.insertDevice(second)
        let moved = try #require(try await store.device(id: first.id))
        #expect(moved.token == nil)
        #expect(moved.isActive == false)
        #expect(try await store.device(id: second.id)?.token == Fixtures.apnsToken(7))

        var third = Fixtures.device(token: Fixtures.apnsToken(8)).device
        try await store.insertDevice(third)
        third.token = Fixtures.apnsToken(7)
        try await store.updateDevice(third)
        #expect(try await store.device(id: second.id)?.token == nil)
        #expect(try await store.device(id: third.id)?.token == Fixtures.apnsToken(7))
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func deactivationOnlyAppliesToTheTokenThatWasUsed(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        var device = Fixtures.device(token: Fixtures.apnsToken(1)).device
        try await store.insertDevice(device)
        device.token = Fixtures.apnsToken(2)
        try await store.updateDevice(device)
        try await store.deactivateDevice(id: device.id, token: Fixtures.apnsToken(1), reason: "Unregistered", at: start)
        #expect(try await store.device(id: device.id)?.isActive == true)
        try await store.deactivateDevice(id: device.id, token: Fixtures.apnsToken(2), reason: "Unregistered", at: start)
        let stored = try #require(try await store.device(id: device.id))
        #expect(stored.isActive == false)
        #expect(stored.inactiveReason == "Unregistered")
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func acceptCountsAgainstTheQuotaAndRefusesPastIt(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let quota = QuotaRequest(day: today, maximum: 2)
        #expect(try await store.accept(Fixtures.notification(for: device), quota: quota) == .accepted(.init(attempts: 1, successful: 1, total: 1)))
        #expect(try await store.accept(Fixtures.notification(for: device), quota: quota) == .accepted(.init(attempts: 2, successful: 2, total: 2)))
        let refused = Fixtures.notification(for: device)
        #expect(try await store.accept(refused, quota: quota) == .quotaExceeded(.init(attempts: 3, successful: 2, total: 2)))
        #expect(try await store.notification(id: refused.id) == nil)

        let exempt = Fixtures.notification(for: device)
        #expect(try await store.accept(exempt, quota: QuotaRequest(day: today, maximum: nil)) == .accepted(.init(attempts: 4, successful: 2, total: 2)))
        #expect(try await store.notification(id: exempt.id) == exempt)
        #expect(try await store.quotaCounters(deviceID: device.id, day: "2000-01-01") == QuotaCounters())
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func concurrentAcceptsNeitherOverNorUnderCount(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let decisions = try await withThrowingTaskGroup(of: AcceptDecision.self) { group in
            for _ in 0..<40 {
                group.addTask { try await store.accept(Fixtures.notification(for: device), quota: QuotaRequest(day: today, maximum: 15)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let accepted = decisions.filter { if case .accepted = $0 { true } else { false } }
        #expect(accepted.count == 15)
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters(attempts: 40, successful: 15, total: 15))
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func releasingQuotaMovesACountToErrorsOnce(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        var notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: 5))
        notification.status = .failed
        notification.lastError = "BadDeviceToken"
        notification.attempts = 1
        try await store.updateNotification(notification, releaseQuota: true)
        try await store.updateNotification(notification, releaseQuota: true)
        #expect(try await store.quotaCounters(deviceID: device.id, day: today) == QuotaCounters(attempts: 1, successful: 0, errors: 1, total: 1))
        #expect(try await store.notification(id: notification.id) == notification)
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func dueNotificationsArePendingDueAndForTheGivenPlatforms(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let apple = Fixtures.device(token: Fixtures.apnsToken(1)).device
        let socket = Fixtures.device(platform: .websocket).device
        try await store.insertDevice(apple)
        try await store.insertDevice(socket)
        let quota = QuotaRequest(day: today, maximum: nil)
        let early = Fixtures.notification(for: apple, at: start)
        let later = Fixtures.notification(for: apple, at: start.addingTimeInterval(1))
        let notYet = Fixtures.notification(for: apple, at: start.addingTimeInterval(0.5), nextAttemptAt: start.addingTimeInterval(60))
        var done = Fixtures.notification(for: apple, at: start)
        let forSocket = Fixtures.notification(for: socket, at: start)
        for notification in [later, early, notYet, done, forSocket] { _ = try await store.accept(notification, quota: quota) }
        done.status = .delivered
        try await store.updateNotification(done, releaseQuota: false)

        let now = start.addingTimeInterval(10)
        #expect(try await store.dueNotifications(at: now, platforms: [.apns], limit: 10).map(\.id) == [early.id, later.id])
        #expect(try await store.dueNotifications(at: now, platforms: [.apns], limit: 1).map(\.id) == [early.id])
        #expect(try await store.dueNotifications(at: now, platforms: [.websocket], limit: 10).map(\.id) == [forSocket.id])
        #expect(try await store.dueNotifications(at: now, platforms: [], limit: 10).isEmpty)
        #expect(try await store.pendingNotifications(deviceID: apple.id, limit: 10).map(\.id) == [early.id, notYet.id, later.id])
        try await store.close()
    }

    @Test(arguments: Backend.allCases)
    func deletingADeviceRemovesItsNotifications(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        _ = try await store.accept(notification, quota: QuotaRequest(day: today, maximum: 5))
        try await store.deleteDevice(id: device.id)
        #expect(try await store.device(id: device.id) == nil)
        #expect(try await store.notification(id: notification.id) == nil)
        #expect(await store.isReachable())
        try await store.close()
    }
}

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
