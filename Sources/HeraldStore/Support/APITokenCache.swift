import Foundation
import HeraldCore
import Synchronization

/// API tokens recently looked up by their hash, so that a request's bearer token is not read from the database at every
/// request (a visit to a reader connection and back). Only tokens found are kept, so a new token changes nothing here;
/// the store that owns it forgets every entry at a revocation or a device's deletion, and a token whose last use it
/// writes; entries also expire after ``timeToLive``, which bounds how long a revocation made by another process
/// (`herald token revoke` on the same file) takes to be seen.
///
/// As with ``DeviceCache``, a lookup takes the ``generation`` before it reads, and ``remember(_:readSince:)`` drops
/// what it read when a write happened meanwhile.
final class APITokenCache: Sendable {
    private struct Entry {
        var token: APIToken
        var expiresAt: ContinuousClock.Instant
    }

    private struct State {
        var byHash: [String: Entry] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    let capacity: Int
    let timeToLive: Duration

    init(capacity: Int = 10_000, timeToLive: Duration = .seconds(2)) {
        self.capacity = capacity
        self.timeToLive = timeToLive
    }

    /// The token with this hash, if it was read less than ``timeToLive`` ago and nothing was written since.
    func token(hash: String) -> APIToken? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.byHash[hash], entry.expiresAt > now else { return nil }
            return entry.token
        }
    }

    /// Changes at every write.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `token`, read after the cache's generation was `generation`, unless something was written since.
    func remember(_ token: APIToken, readSince generation: UInt64) {
        let expiresAt = ContinuousClock.now.advanced(by: timeToLive)
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.byHash.count >= capacity {
                // Make room by dropping an arbitrary tenth (one pass over the keys); a miss only costs a read.
                for hash in Array(state.byHash.keys.prefix(max(capacity / 10, 1))) { state.byHash[hash] = nil }
            }
            state.byHash[token.tokenHash] = Entry(token: token, expiresAt: expiresAt)
        }
    }

    /// Forgets one token (its last use was written).
    func forget(id: APIToken.ID) {
        state.withLock { state in
            state.generation &+= 1
            if let hash = state.byHash.first(where: { $0.value.token.id == id })?.key { state.byHash[hash] = nil }
        }
    }

    /// How many tokens are kept (for tests).
    var count: Int { state.withLock { $0.byHash.count } }

    /// Forgets every token (a token or a device was written).
    func forgetAll() {
        state.withLock { state in state = State(generation: state.generation &+ 1) }
    }
}
