import Foundation
import HeraldCore
import PostgresNIO
import Synchronization

/// Device lookups that miss the cache, batched as on SQLite (``Batcher``): the lookups of concurrent requests, by id or
/// by USER_ID hash, are one prepared statement (``DeviceLookups``), not one round trip each.
extension PostgresStore {
    /// How a device is looked up.
    enum DeviceKey: Sendable, Hashable {
        case id(Device.ID)
        case userIDHash(String)
    }

    /// The devices with any of `ids` or `hashes`.
    struct DeviceLookups: PostgresPreparedStatement {
        static let name = "herald_device_lookups"
        static var sql: String {
            "SELECT \(PostgresStore.deviceColumns) FROM device WHERE id = ANY($1::uuid[]) OR user_id_hash = ANY($2::text[])"
        }
        typealias Row = Device

        var ids: [Device.ID]
        var hashes: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(ids)
            bindings.append(hashes)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresStore.device(row) }
    }

    /// Looks a device up through the batch (the cache missed); remembers what it read.
    func lookUpDevice(_ key: DeviceKey) async throws -> Device? {
        let generation = devices.generation
        let device = try await deviceReads.submit(key)
        if let device { devices.remember(device, readSince: generation) }
        return device
    }

    /// One batch of lookups: one statement, each key answered from its rows.
    static func lookUp(_ keys: [DeviceKey], in store: PostgresStore?) async -> [Result<Device?, any Error>] {
        guard let store else { return keys.map { _ in .failure(StoreError.unavailable("the store is closed")) } }
        var ids: Set<Device.ID> = []
        var hashes: Set<String> = []
        for key in keys {
            switch key {
            case .id(let id): ids.insert(id)
            case .userIDHash(let hash): hashes.insert(hash)
            }
        }
        do {
            let found = try await store.read(DeviceLookups(ids: Array(ids), hashes: Array(hashes)))
            let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let byHash = Dictionary(found.map { ($0.userIDHash, $0) }, uniquingKeysWith: { first, _ in first })
            return keys.map { key in
                switch key {
                case .id(let id): .success(byID[id])
                case .userIDHash(let hash): .success(byHash[hash])
                }
            }
        } catch {
            return keys.map { _ in .failure(error) }
        }
    }
}

/// The store the device batch reads through, set once the store is made (the batch is made before it); weak, so that
/// the batch does not keep a store alive.
final class PostgresStoreReference: Sendable {
    private struct Weak: Sendable {
        weak var store: PostgresStore?
    }

    private let reference = Mutex(Weak())

    var store: PostgresStore? { reference.withLock { $0.store } }

    func set(_ store: PostgresStore) {
        reference.withLock { $0.store = store }
    }
}
