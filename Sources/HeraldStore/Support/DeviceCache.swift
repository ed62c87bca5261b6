import Foundation
import HeraldCore
import Synchronization

/// Devices recently read, by id and by USER_ID hash, so that a send reads its device from the database at most once
/// (and usually not at all). The store that owns it invalidates an entry on every write to that device; entries also
/// expire after `timeToLive`, which bounds how long a change made by another process (`herald limits set` on the same
/// file) takes to be seen.
///
/// A read that began before a write may end after the write's invalidation: it would put the old device back. So a
/// reader takes the cache's ``generation`` before it reads and ``remember(_:readSince:)`` drops what it read when an
/// invalidation happened meanwhile.
final class DeviceCache: Sendable {
    private struct Entry {
        var device: Device
        var expiresAt: ContinuousClock.Instant
    }

    private struct State {
        var byID: [Device.ID: Entry] = [:]
        var idByUserIDHash: [String: Device.ID] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let timeToLive: Duration

    init(capacity: Int = 100_000, timeToLive: Duration = .seconds(10)) {
        self.capacity = capacity
        self.timeToLive = timeToLive
    }

    func device(id: Device.ID) -> Device? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.byID[id], entry.expiresAt > now else { return nil }
            return entry.device
        }
    }

    func device(userIDHash: String) -> Device? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let id = state.idByUserIDHash[userIDHash], let entry = state.byID[id], entry.expiresAt > now else { return nil }
            return entry.device
        }
    }

    /// Changes at every invalidation.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `device`, read after the cache's generation was `generation`, unless an entry was invalidated since.
    func remember(_ device: Device, readSince generation: UInt64) {
        let expiresAt = ContinuousClock.now.advanced(by: timeToLive)
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.byID.count >= capacity {
                // Make room by dropping an arbitrary tenth (one pass over the keys); a cache miss only costs a read.
                for (id, entry) in Array(state.byID.prefix(max(capacity / 10, 1))) {
                    state.byID[id] = nil
                    state.idByUserIDHash[entry.device.userIDHash] = nil
                }
            }
            if let previous = state.byID[device.id], previous.device.userIDHash != device.userIDHash {
                state.idByUserIDHash[previous.device.userIDHash] = nil
            }
            state.byID[device.id] = Entry(device: device, expiresAt: expiresAt)
            state.idByUserIDHash[device.userIDHash] = device.id
        }
    }

    /// Forgets every device (changes made elsewhere may have been missed: another instance's, while the PostgreSQL
    /// store was not listening).
    func forgetAll() {
        state.withLock { state in state = State(generation: state.generation &+ 1) }
    }

    /// Forgets one device (it was written).
    func invalidate(id: Device.ID) {
        state.withLock { state in
            state.generation &+= 1
            if let entry = state.byID.removeValue(forKey: id) { state.idByUserIDHash[entry.device.userIDHash] = nil }
        }
    }
}
