import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import Testing

/// Two PostgreSQL stores on one schema stand for two instances: what they tell each other (``PostgresCluster``).
@Suite("PostgreSQL cluster")
struct PostgresClusterTests {
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func eachInstanceKnowsWhereTheClientsAre() async throws {
        let (first, second) = try await Self.twoInstances()
        let deviceID = UUID()
        let firstCluster = try #require(first.cluster)
        let secondCluster = try #require(second.cluster)
        try await firstCluster.connected(deviceID, on: "a")
        #expect(await eventually { secondCluster.instance(connectedTo: deviceID, besides: "b") == "a" })
        #expect(firstCluster.instance(connectedTo: deviceID, besides: "a") == nil, "an instance never hands over to itself")

        try await firstCluster.disconnected(deviceID, on: "a")
        #expect(await eventually { secondCluster.instance(connectedTo: deviceID, besides: "b") == nil })

        try await firstCluster.connected(deviceID, on: "a")
        #expect(await eventually { secondCluster.instance(connectedTo: deviceID, besides: "b") == "a" })
        try await firstCluster.leave("a")
        #expect(await eventually { secondCluster.instance(connectedTo: deviceID, besides: "b") == nil })
        try await first.close()
        try await second.close()
    }

    /// An instance that starts later reads who has which clients from the table.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aLaterInstanceReadsThePresenceTable() async throws {
        let configuration = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresTestDatabase.openStore(configuration)
        let deviceID = UUID()
        try await #require(first.cluster).connected(deviceID, on: "a")
        let later = try await PostgresTestDatabase.openStore(configuration)
        #expect(try #require(later.cluster).instance(connectedTo: deviceID, besides: "b") == "a")
        try await first.close()
        try await later.close()
    }

    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func messagesReachEveryInstance() async throws {
        let (first, second) = try await Self.twoInstances()
        let message = ClusterMessage.confirmed(confirmID: "c0ffee", deviceID: UUID())
        let received = Task { () -> ClusterMessage? in
            for await message in try #require(second.cluster).messages { return message }
            return nil
        }
        try await #require(first.cluster).send(message)
        #expect(try await received.value == message)
        try await first.close()
        try await second.close()
    }

    /// A device written through one instance is read fresh by the other as soon as the write returned, although the
    /// other had it cached.
    @Test(.enabled(if: PostgresTestDatabase.url != nil))
    func aDeviceWriteEmptiesEveryInstancesCache() async throws {
        let (first, second) = try await Self.twoInstances()
        var device = Fixtures.device().device
        try await first.insertDevice(device)
        #expect(try await second.device(id: device.id)?.token == device.token)  // cached by the second
        device.token = Fixtures.apnsToken(0x77)
        try await first.updateDevice(device)
        #expect(try await second.device(id: device.id)?.token == Fixtures.apnsToken(0x77))
        try await first.deleteDevice(id: device.id)
        #expect(try await second.device(id: device.id) == nil)
        #expect(try await second.device(userIDHash: device.userIDHash) == nil)
        try await first.close()
        try await second.close()
    }

    private static func twoInstances() async throws -> (PostgresStore, PostgresStore) {
        let configuration = try await PostgresTestDatabase.freshSchema()
        return (try await PostgresTestDatabase.openStore(configuration), try await PostgresTestDatabase.openStore(configuration))
    }
}
