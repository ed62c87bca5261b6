import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

private let start = Date(timeIntervalSince1970: 1_763_769_600)

@Suite("PostgreSQL store")
struct PostgresStoreTests {
    /// Says loudly when the PostgreSQL store was not tested; fails where it must be (CI sets HERALD_REQUIRE_POSTGRES=1).
    @Test func theStoreContractRanAgainstPostgreSQL() {
        guard PostgresTestDatabase.url == nil else { return }
        if PostgresTestDatabase.isRequired {
            Issue.record("PostgreSQL is required (HERALD_REQUIRE_POSTGRES=1) but HERALD_TEST_POSTGRES_URL is not set")
        } else {
            print("⚠️  PostgreSQL store tests DID NOT RUN: set HERALD_TEST_POSTGRES_URL (postgres://user@127.0.0.1:55432/postgres)")
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func instancesStartingTogetherMigrateOnceUnderTheAdvisoryLock() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
            for _ in 0..<3 { group.addTask { try await PostgresTestDatabase.openStore(configuration) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for store in stores {
            #expect(try await store.schemaVersion() == PostgresMigrations.latestVersion)
        }
        let migrations = try await stores[0].read("SELECT count(*) FROM schema_version").first?.decode(Int.self)
        #expect(migrations == PostgresMigrations.all.count)
        for store in stores { try await store.close() }
    }

    /// Three stores on one database stand for three instances: the quota holds across them.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func theQuotaIsExactAcrossInstances() async throws {
        let device = Fixtures.device().device
        let instances = try await Self.instances(3, devices: [device])
        let day = UTCDay(containing: start).description
        let decisions = try await withThrowingTaskGroup(of: AcceptDecision.self) { group in
            for index in 0..<30 {
                let store = instances[index % instances.count]
                group.addTask { try await store.accept(Fixtures.notification(for: device), quota: QuotaRequest(day: day, maximum: 5)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(decisions.filter { if case .accepted = $0 { true } else { false } }.count == 5)
        #expect(try await instances[1].quotaCounters(deviceID: device.id, day: day) == QuotaCounters(attempts: 30, successful: 5, total: 5))
        for store in instances { try await store.close() }
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func instancesClaimingTheSameNotificationsNeverShareOne() async throws {
        let device = Fixtures.device().device
        let instances = try await Self.instances(3, devices: [device])
        let notifications = (0..<60).map { _ in Fixtures.notification(for: device, at: start) }
        _ = try await instances[0].commit(
            WriteBatch(
                accepts: notifications.map { AcceptRequest(notification: $0, quota: QuotaRequest(day: "2025-11-22", maximum: nil)) },
                owner: ""))
        let ids = notifications.map(\.id)
        let now = start.addingTimeInterval(1)
        let claims = try await withThrowingTaskGroup(of: [PushNotification.ID].self) { group in
            for (index, store) in instances.enumerated() {
                for round in 0..<3 {
                    let lease = Lease(owner: "instance-\(index)-\(round)", expiresAt: now.addingTimeInterval(30))
                    group.addTask { try await store.claim(ids.shuffled(), lease: lease, at: now).map(\.id) }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let claimed = claims.flatMap { $0 }
        #expect(claimed.count == ids.count)
        #expect(Set(claimed) == Set(ids))
        for store in instances { try await store.close() }
    }

    /// Two instances committing batches that count for two devices in opposite orders: the counters are locked in one
    /// order (without it PostgreSQL aborts one of each pair of such transactions as a deadlock, again and again).
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func batchesLockingDevicesInOppositeOrdersAllCommit() async throws {
        let devices = [Fixtures.device().device, Fixtures.device().device]
        let instances = try await Self.instances(2, devices: devices)
        let day = UTCDay(containing: start).description
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<40 {
                let order = round.isMultiple(of: 2) ? devices : devices.reversed()
                let store = instances[round % 2]
                group.addTask {
                    let accepts = order.map { AcceptRequest(notification: Fixtures.notification(for: $0), quota: QuotaRequest(day: day, maximum: 1_000)) }
                    _ = try await store.commit(WriteBatch(accepts: accepts, owner: "instance-\(round % 2)"))
                }
            }
            try await group.waitForAll()
        }
        for device in devices {
            #expect(try await instances[0].quotaCounters(deviceID: device.id, day: day).successful == 40)
        }
        for store in instances { try await store.close() }
    }

    /// `count` stores on one fresh schema, in which `devices` are registered.
    private static func instances(_ count: Int, devices: [Device]) async throws -> [PostgresStore] {
        let configuration = try await PostgresTestDatabase.freshSchema()
        var stores: [PostgresStore] = []
        for _ in 0..<count { stores.append(try await PostgresTestDatabase.openStore(configuration)) }
        for device in devices { try await stores[0].insertDevice(device) }
        return stores
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func keepsEverythingAcrossReopening() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let store = try await PostgresTestDatabase.openStore(configuration)
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        let notification = Fixtures.notification(for: device)
        let day = UTCDay(containing: start).description
        _ = try await store.accept(notification, quota: QuotaRequest(day: day, maximum: 5))
        try await store.close()

        let reopened = try await PostgresTestDatabase.openStore(configuration)
        #expect(try await reopened.device(id: device.id) == device)
        #expect(try await reopened.notification(id: notification.id) == notification)
        #expect(try await reopened.quotaCounters(deviceID: device.id, day: day).successful == 1)
        #expect(await reopened.readiness() == .ready)
        try await reopened.close()
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func refusesASchemaNewerThanItKnows() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let store = try await PostgresTestDatabase.openStore(configuration)
        try await store.write("INSERT INTO schema_version (version, description) VALUES (999, 'from the future')")
        try await store.close()
        await #expect(throws: StoreError.schemaTooNew(found: 999, known: PostgresMigrations.latestVersion)) {
            _ = try await PostgresTestDatabase.openStore(configuration)
        }
    }
}

@Suite("PostgreSQL store: no database")
struct PostgresUnreachableTests {
    @Test func aDatabaseThatCannotBeReachedIsAClearErrorWithoutThePassword() async throws {
        let configuration = try PostgresURL("postgres://herald:secret@127.0.0.1:1/herald").clientConfiguration
        let error = try await #require(throws: StoreError.self) {
            _ = try await PostgresStore(configuration: configuration, startupTimeout: .milliseconds(500))
        }
        #expect(error.description.contains("127.0.0.1:1"))
        #expect(!error.description.contains("secret"))
    }
}

@Suite("PostgreSQL URLs")
struct PostgresURLTests {
    @Test func readsEveryPartPercentDecoded() throws {
        let url = try PostgresURL("postgresql://her%40ld:p%3Ass%2Fword@db.example.com:6543/push%20db?sslmode=verify-full")
        #expect(url.username == "her@ld")
        #expect(url.password == "p:ss/word")
        #expect(url.host == "db.example.com")
        #expect(url.port == 6543)
        #expect(url.database == "push db")
        #expect(url.sslMode == .verifyFull)
    }

    @Test func defaultsToPort5432TheUsersDatabaseAndNoTLS() throws {
        let url = try PostgresURL("postgres://herald@127.0.0.1")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.database == nil)
        #expect(url.sslMode == .prefer)
        #expect(try PostgresURL("postgres://herald@127.0.0.1/?sslmode=require").sslMode == .require)
        #expect(try PostgresURL("postgres://herald@127.0.0.1/herald?sslmode=disable").sslMode == .disable)
        #expect(try PostgresURL("postgres://herald@[::1]:5433/herald").host == "::1")
    }

    @Test(arguments: [
        "postgres://:secret@localhost/herald",  // no user
        "postgres://herald:secret@/herald",  // no host
        "postgres://herald:secret@localhost/herald?sslmode=sometimes",
        "postgres://herald:secret@localhost/herald?timeout=5",
        "postgres://herald:secret@localhost/a/b",
    ])
    func refusesWhatItCannotUseWithoutRepeatingThePassword(_ text: String) async throws {
        let error = try #require(throws: StoreError.self) { try PostgresURL(text) }
        guard case .invalidURL = error else { Issue.record("\(error)"); return }
        #expect(!error.description.contains("secret"))
        await #expect(throws: StoreError.self) { _ = try await StoreFactory.open(text) }
    }

    @Test func messagesShowTheURLWithoutItsPassword() {
        #expect(StoreFactory.displayed("postgres://herald:secret@db:5432/herald") == "postgres://herald:***@db:5432/herald")
        #expect(StoreFactory.displayed("postgres://herald@db/herald") == "postgres://herald@db/herald")
        #expect(StoreFactory.displayed("sqlite:/var/lib/herald/herald.sqlite") == "sqlite:/var/lib/herald/herald.sqlite")
    }
}
